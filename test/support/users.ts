import type { AppContext } from '../../src/app-context';
import { insertUser } from '../../src/accounts/store';
import { hashPassword } from '../../src/accounts/passwords';
import { createSession } from '../../src/sessions/store';

let n = 0;

/**
 * A user with a live session, made through the domain functions (no HTTP sign-in): no verification
 * code issued, no mail queued, no password unless `password` is given (hashed with cost 4).
 * Accounts through the API: accounts.ts.
 */
export async function signedInUser(
  ctx: AppContext,
  opts: { operator?: boolean; transport?: 'bearer' | 'cookie'; verified?: boolean; name?: string; password?: string } = {},
) {
  const email = `user${++n}-${Date.now()}@example.com`;
  const passwordHash = opts.password === undefined ? undefined : await hashPassword(opts.password, 4);
  const userId = await insertUser(ctx.db, { email, name: opts.name ?? 'Test User', passwordHash });
  if (opts.operator) await ctx.db('users').where({ id: userId }).update({ is_operator: true });
  if (opts.verified) await ctx.db('users').where({ id: userId }).update({ email_verified_at: ctx.now() });
  const session = await createSession(ctx.db, { userId, transport: opts.transport ?? 'bearer' }, ctx.config.session, ctx.now());
  return { userId, email, sessionId: session.id, token: session.token, auth: `Bearer ${session.token}` };
}
