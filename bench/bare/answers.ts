// What the bare baselines answer, with no framework: the same SQL the service sends for each
// benchmarked request, on node-pg with the same pool size, as the same application role (row-level
// security applies), in the same round trips, and the same JSON bodies:
//
//   GET /v1/ping                   no database
//   GET /v1/auth/me                the session lookup with the user's second factors (src/sessions/store.ts)
//   GET /v1/orgs                   the session lookup without them; the list with its context (src/orgs/store.ts), one statement
//   GET /v1/orgs/{orgId}           lookup; app_enter_org (src/orgs/store.ts), one statement
//   GET /v1/orgs/{orgId}/projects  lookup; app_org_projects (src/projects/store.ts), one statement
//   GET /ops/audit                 lookup (an operator's bearer session); the first page (src/audit/store.ts)
//   POST /v1/auth/login            (Express only) both login limits counted by the same Redis script
//                                  (src/ratelimit/limits.ts); the user with its second factors
//                                  (src/accounts/store.ts); bcrypt over the same pre-hash; the session
//                                  and auth.login.succeeded in one statement (src/sessions/store.ts)
//
// node.ts serves them on node:http, express.ts on Express 5 routes: the two ceilings a request of
// the service is compared with. The statement texts are what knex generates for those calls.
//
// Environment: BARE_DATABASE_URL (no database routes without it), BARE_POOL_MAX (10),
// BARE_REDIS_URL and BARE_REDIS_PREFIX (login's limits), BARE_BCRYPT_COST (the unknown email's hash).
import pg from 'pg';
import { Redis } from 'ioredis';
import { hashToken, looksLikeToken } from '../../src/sessions/tokens';
import { hashPassword, verifyPassword } from '../../src/accounts/passwords';
import { FIND_USER_FOR_SIGN_IN } from '../../src/accounts/store';
import { COUNT_ATTEMPTS } from '../../src/ratelimit/limits';
import { runScript } from '../../src/platform/redis';
import { INSERT_SESSION_AUDITED, newSession } from '../../src/sessions/store';
import { sessionEndsAt } from '../../src/sessions/expiry';
import { eventValues } from '../../src/audit/store';
import { ENTER_ORG, FIND_LIVE_SESSION, FIND_LIVE_SESSION_WITH_SECOND_FACTORS, LIST_ORGS, LIST_PROJECTS_AS_MEMBER } from '../orgs/sql';

const LIMIT = 50;
const IDLE_TIMEOUT_MS = 14 * 24 * 3600 * 1000; // SESSION_IDLE_TIMEOUT_SECONDS default
const TOUCH_EVERY_MS = 60_000;
const AUDIT_PAGE =
  'select id, at, action, actor_kind, actor_id, target_kind, target_id, org_id, ip, user_agent, request_id, data, (extract(epoch from at) * 1000000)::bigint as at_us from audit_events where true order by at desc, id desc limit $1';

/** Status and JSON body. */
export type Answer = [number, unknown];

let pool: pg.Pool | undefined;
const db = () =>
  (pool ??= new pg.Pool({ connectionString: process.env.BARE_DATABASE_URL, max: Number(process.env.BARE_POOL_MAX ?? 10), idleTimeoutMillis: 30_000 }));
let redis: Redis | undefined;
const kv = () => (redis ??= new Redis(process.env.BARE_REDIS_URL ?? 'redis://127.0.0.1:6379'));
export const closePool = async () => {
  redis?.disconnect();
  await pool?.end();
};

const iso = (d: Date) => d.toISOString();
/* eslint-disable @typescript-eslint/no-explicit-any -- rows of known statements, mapped field by field as the service does */
const orgBody = (r: any) => ({
  id: r.id,
  name: r.name,
  slug: r.slug,
  role: r.role,
  member_count: r.member_count,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
  deleted_at: r.deleted_at ? iso(r.deleted_at) : null,
});
const projectBody = (r: any) => ({
  id: r.id,
  org_id: r.org_id,
  name: r.name,
  description: r.description,
  created_by: r.created_by,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});
const userBody = (r: any) => ({
  id: r.id,
  email: r.email,
  email_verified: r.email_verified_at !== null,
  name: r.name,
  operator: r.is_operator,
  mfa: { enabled: r.mfa_totp || r.mfa_passkeys > 0, totp: r.mfa_totp, passkeys: r.mfa_passkeys, recovery_codes_remaining: r.mfa_recovery_codes },
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});
const auditBody = (r: any) => ({
  id: r.id,
  at: iso(r.at),
  action: r.action,
  actor: { kind: r.actor_kind, id: r.actor_id },
  target: r.target_kind !== null && r.target_id !== null ? { kind: r.target_kind, id: r.target_id } : null,
  org_id: r.org_id,
  ip: r.ip,
  user_agent: r.user_agent,
  request_id: r.request_id,
  data: r.data,
});
const listBody = (rows: any[], toBody: (r: any) => unknown, keyOf: (r: any) => Record<string, unknown> = (r) => ({ id: r.id })) => {
  const items = rows.slice(0, LIMIT);
  const next = rows.length > LIMIT ? Buffer.from(JSON.stringify(keyOf(items[items.length - 1]))).toString('base64url') : null;
  return { items: items.map(toBody), next_cursor: next };
};

/** The live session's row (user, and second factors if asked) of `Authorization: Bearer …`, touched as the service does. */
async function sessionOf(authorization: string | undefined, secondFactors = false): Promise<any | null> {
  const token = authorization?.startsWith('Bearer ') ? authorization.slice(7).trim() : '';
  if (!looksLikeToken(token)) return null;
  const now = Date.now();
  const { rows } = await db().query({
    ...(secondFactors ? FIND_LIVE_SESSION_WITH_SECOND_FACTORS : FIND_LIVE_SESSION),
    values: [hashToken(token), new Date(now).toISOString(), new Date(now - IDLE_TIMEOUT_MS).toISOString(), new Date(now - TOUCH_EVERY_MS).toISOString()],
  });
  return rows[0] && rows[0].transport === 'bearer' ? rows[0] : null;
}
/* eslint-enable @typescript-eslint/no-explicit-any */

const UNAUTHENTICATED: Answer = [401, { code: 'unauthenticated' }];
const NOT_FOUND: Answer = [404, { code: 'not_found' }];

export const ping = (): Answer => [200, { pong: true, time: new Date().toISOString() }];

export async function me(authorization: string | undefined): Promise<Answer> {
  const session = await sessionOf(authorization, true);
  return session ? [200, userBody(session)] : UNAUTHENTICATED;
}

export async function listOrgs(authorization: string | undefined): Promise<Answer> {
  const session = await sessionOf(authorization);
  if (!session) return UNAUTHENTICATED;
  // One statement, no explicit transaction (as OrgService.list).
  const rows = (await db().query({ ...LIST_ORGS, values: [session.id, null, null, LIMIT + 1] })).rows;
  return [200, listBody(rows, orgBody)];
}

/** One statement, no explicit transaction (as OrgService.get). */
export async function getOrg(authorization: string | undefined, orgId: string): Promise<Answer> {
  const session = await sessionOf(authorization);
  if (!session) return UNAUTHENTICATED;
  const found = (await db().query({ ...ENTER_ORG, values: [session.id, orgId, false] })).rows[0];
  return found && !found.deleted_at ? [200, orgBody(found)] : NOT_FOUND;
}

/** One statement, no explicit transaction (as ProjectService.list). */
export async function listProjects(authorization: string | undefined, orgId: string, cursor: string | undefined): Promise<Answer> {
  const session = await sessionOf(authorization);
  if (!session) return UNAUTHENTICATED;
  const before = cursor ? (JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')).id as string) : null;
  const rows = (await db().query({ ...LIST_PROJECTS_AS_MEMBER, values: [session.id, orgId, before, LIMIT + 1] })).rows;
  if (!rows.length || rows[0].org_deleted_at) return NOT_FOUND;
  return [200, listBody(rows.filter((r) => r.id !== null), projectBody)];
}

const ABSOLUTE_LIFETIME_SECONDS = 90 * 24 * 3600; // SESSION_ABSOLUTE_LIFETIME_SECONDS default
const LOGIN_WINDOW_MS = 60_000;
let unknownEmailHash: Promise<string> | undefined;

/** A password sign-in of a user without a second factor, bearer transport. */
export async function login(body: unknown, ip: string, userAgent: string | null): Promise<Answer> {
  const { email, password } = (body ?? {}) as { email?: unknown; password?: unknown };
  if (typeof email !== 'string' || typeof password !== 'string') return [422, { code: 'validation_failed' }];
  const address = email.trim().toLowerCase();
  const prefix = process.env.BARE_REDIS_PREFIX ?? 'bare:';
  // Counted as the service counts them (the bench raises the service's limits, so nothing is refused).
  await runScript(kv(), COUNT_ATTEMPTS, [`${prefix}rl:login.ip:${ip}`, `${prefix}rl:login.email:${address}`], [LOGIN_WINDOW_MS, LOGIN_WINDOW_MS]);
  const user = (await db().query({ ...FIND_USER_FOR_SIGN_IN, values: [address] })).rows[0];
  unknownEmailHash ??= hashPassword('nobody knows this', Number(process.env.BARE_BCRYPT_COST ?? 10));
  const matches = await verifyPassword(password, user?.password_hash ?? (await unknownEmailHash));
  if (!user || !matches) return [401, { code: 'invalid_credentials' }];
  if (user.disabled_at) return [403, { code: 'account_disabled' }];
  const now = new Date();
  const { session, values } = newSession({ userId: user.id, transport: 'bearer', ip, userAgent }, { absoluteLifetimeSeconds: ABSOLUTE_LIFETIME_SECONDS }, now);
  const event = eventValues({
    action: 'auth.login.succeeded',
    actor: { kind: 'user', id: user.id },
    target: { kind: 'session', id: session.id },
    data: { method: 'password', transport: 'bearer' },
    meta: { ip, userAgent, requestId: null },
  });
  await db().query({ ...INSERT_SESSION_AUDITED, values: [...values, ...event] });
  const expiresAt = sessionEndsAt(now, session.expiresAt, IDLE_TIMEOUT_MS / 1000);
  return [200, { mfa_required: false, user: userBody(user), session: { id: session.id, expires_at: iso(expiresAt) }, token: session.token }];
}

/** The first page of the audit log, for an operator. */
export async function listAudit(authorization: string | undefined): Promise<Answer> {
  const session = await sessionOf(authorization);
  if (!session) return UNAUTHENTICATED;
  if (!session.is_operator) return [403, { code: 'forbidden' }];
  const rows = (await db().query(AUDIT_PAGE, [LIMIT + 1])).rows;
  return [200, listBody(rows, auditBody, (r) => ({ at: Number(r.at_us), id: r.id }))];
}
