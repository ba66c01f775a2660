import type { Handler } from '../../src/http/handler-types';

/** Unlinks one of the caller's identities, unless it is their last way to sign in (409). */
export const unlinkIdentity: Handler<'unlinkIdentity'> = async ({ services, caller, params, meta }) => {
  await services.identities.unlinkOwn(caller.userId, params.id, meta);
  return { status: 204, body: undefined };
};
