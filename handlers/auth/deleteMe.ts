import type { Handler } from '../types';
import { deleteAccount, verifyFreshProof } from '../../src/accounts/delete-account';
import { sessionCookieName } from '../../src/http/authenticate';
import { problems } from '../../src/http/problem';

export const deleteMe: Handler<'deleteMe'> = async (ctx) => {
  const { app, caller, body } = ctx;
  if (!caller) throw problems.unauthenticated();
  const meta = { requestId: ctx.requestId, ip: ctx.ip, userAgent: ctx.userAgent };
  const proofMethod = body.password !== undefined ? 'password' : body.code !== undefined ? 'code' : 'passkey';
  await verifyFreshProof(app, { userId: caller.userId, proof: body, operation: 'deleteMe', meta });
  await deleteAccount(app, { userId: caller.userId, proofMethod, meta });
  // Clear the session cookie (Max-Age=0), whichever transport this request used.
  ctx.res.cookie(sessionCookieName(app.config), '', {
    httpOnly: true,
    secure: app.config.publicBaseUrl.startsWith('https:'),
    sameSite: 'lax',
    path: '/',
    maxAge: 0,
  });
  return { status: 204, body: undefined };
};
