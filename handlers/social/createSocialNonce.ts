import type { Handler } from '../../src/http/handler-types';

/** A single-use nonce (10 minutes) for a native sign-in with the provider's SDK. */
export const createSocialNonce: Handler<'createSocialNonce'> = async ({ services, params }) => {
  const { nonce, expiresAt } = await services.social.createNonce(params.provider);
  return { status: 201, body: { nonce, expires_at: expiresAt.toISOString() } };
};
