import type { Handler } from '../../src/http/handler-types';

/** Always 202 with the same body, whether or not the address has an account (the work is a job). */
export const forgotPassword: Handler<'forgotPassword'> = async ({ services, body, meta }) => {
  const { codeExpiresIn } = await services.passwordReset.request(body.email, meta);
  return { status: 202, body: { accepted: true, code_expires_in: codeExpiresIn } };
};
