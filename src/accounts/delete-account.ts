// Delete account (DELETE /v1/auth/me): a fresh proof, the last-owner check, then the users row
// goes (sessions and one-time codes cascade with it) and `auth.account.deleted` is written in the
// same transaction. Audit events keep the user id as text: a pseudonym once the row is gone.
import type { Knex } from 'knex';
import type { AppContext } from '../app-context';
import { recordAudit, type RequestMeta } from '../audit/store';
import { AppError } from '../http/problem';
import { enforce, reset, type Limit } from '../ratelimit/limiter';
import { revokeOtherSessions } from '../sessions/store';
import { dummyHash, verifyPassword } from './passwords';

/** A fresh proof for a sensitive change (`StepUpProof` in the contract): exactly one of these. */
export interface StepUpProof {
  code?: string;
  passkey?: unknown;
  password?: string;
}

/**
 * "5 wrong proofs per 15 minutes per user" (contract of deleteMe and the other step-up
 * operations). TODO(config owner): move to `config.rateLimits` (e.g. RATE_LIMIT_STEP_UP_PER_15_MINUTES).
 */
export const STEP_UP_LIMIT: Limit = { max: 5, windowSeconds: 15 * 60 };

const stepUpKey = (userId: string) => `stepup:user:${userId}`;

/**
 * Checks a fresh proof for `userId`. Throws 429 once 5 proofs failed within 15 minutes, 401
 * `invalid_credentials` for a wrong password, 401 `invalid_code` for a code or passkey that does not
 * verify, and 422 `second_factor_required` for a password while a second factor is on. A wrong
 * proof writes `auth.step_up.failed` (committed on its own, before the error is thrown).
 */
export async function verifyFreshProof(
  app: AppContext,
  input: { userId: string; proof: StepUpProof; operation: string; meta: RequestMeta },
): Promise<void> {
  const { userId, proof } = input;
  const method = proof.password !== undefined ? 'password' : proof.code !== undefined ? 'code' : 'passkey';
  // Counted before checking, so the 6th try is refused whether or not it is right.
  await enforce(app.redis, app.config.redisPrefix, [{ key: stepUpKey(userId), limit: STEP_UP_LIMIT }]);

  const user = await app.db('users').where({ id: userId }).first('password_hash');
  // Second factors (TOTP, passkeys) arrive with the second-factor issue; until then no user has one.
  const hasSecondFactor = false;

  let ok = false;
  if (method === 'password') {
    if (hasSecondFactor) {
      throw new AppError('second_factor_required', 422, 'Confirm with your authenticator app or a passkey.', {
        errors: [{ message: 'not accepted while a second factor is on; give code or passkey', location: 'body.password' }],
      });
    }
    const hash: string | null = user?.password_hash ?? null;
    // An account without a password (social or passkey only) still pays one bcrypt compare.
    const matches = await verifyPassword(proof.password!, hash ?? (await dummyHash(app.config.auth.bcryptCost)));
    ok = matches && hash !== null;
  }
  // method 'code' | 'passkey': with no TOTP secret and no passkey (and no verification ceremony
  // issued yet) nothing can verify them — the contract answers 401 `invalid_code`.

  if (ok) {
    await reset(app.redis, app.config.redisPrefix, stepUpKey(userId));
    return;
  }
  await app.db.transaction((trx) =>
    recordAudit(trx, {
      action: 'auth.step_up.failed',
      actor: { kind: 'user', id: userId },
      target: { kind: 'user', id: userId },
      data: { operation: input.operation, method },
      meta: input.meta,
    }),
  );
  if (method === 'password') throw new AppError('invalid_credentials', 401, 'The password is wrong.');
  throw new AppError('invalid_code', 401, method === 'code' ? 'The code is wrong.' : 'The passkey response is not valid.');
}

/**
 * The hook for 409 `last_owner`: refuses while the user is the only owner of an organisation that
 * has other members. Organisations do not exist yet (no tables, no memberships), so there is
 * nothing to check today; the organisations issue fills this in (and deletes the organisations
 * where the user is the only member, with their projects), inside the same transaction.
 */
export async function assertCanDeleteAccount(_trx: Knex.Transaction, _userId: string): Promise<void> {
  // Intentionally empty until organisations exist.
}

export interface DeletedAccount {
  sessionsRevoked: number;
}

/**
 * Deletes the account after `verifyFreshProof`: every session revoked, then the users row deleted
 * (sessions and one-time codes cascade; email and name go with it, so the email can register
 * again at once), and `auth.account.deleted` recorded, all in one transaction.
 */
export async function deleteAccount(
  app: AppContext,
  input: { userId: string; proofMethod: 'password' | 'code' | 'passkey'; meta: RequestMeta },
): Promise<DeletedAccount> {
  const { userId } = input;
  return app.db.transaction(async (trx) => {
    const user = await trx('users').where({ id: userId }).forUpdate().first('id');
    // Deleted meanwhile by a concurrent request: its session is gone too, so answer as signed out.
    if (!user) throw new AppError('unauthenticated', 401, 'Sign in to use this operation.');
    await assertCanDeleteAccount(trx, userId);
    const sessionsRevoked = await revokeOtherSessions(trx, userId, null, app.now());
    await recordAudit(trx, {
      action: 'auth.account.deleted',
      actor: { kind: 'user', id: userId },
      target: { kind: 'user', id: userId },
      data: { proof: input.proofMethod, sessions_revoked: sessionsRevoked },
      meta: input.meta,
    });
    await trx('users').where({ id: userId }).delete();
    return { sessionsRevoked };
  });
}
