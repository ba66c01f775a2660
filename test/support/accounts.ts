// Accounts through the typed client (api-client.ts), as a client would make them: signing up
// (POST /v1/auth/register) and signing in (POST /v1/auth/login), with a bearer token or a session
// cookie. Every answer is checked against the contract. Users made directly through the domain
// functions (no HTTP, no verification code issued, no password if need be) are in users.ts.
import type { components } from '../../codegen/api-types';
import { expectStatus } from './api-client';
import type { TestApp } from './test-app';

export const PASSWORD = 'correct horse battery staple';

type Schemas = components['schemas'];
export type ApiUser = Schemas['User'];

let seq = 0;
/** A new address no other test uses: `<tag><n>-<ms>@example.com`. */
export const uniqueEmail = (tag = 'user') => `${tag}${++seq}-${Date.now()}@example.com`;

export interface BearerSession {
  sessionId: string;
  token: string;
  /** The Authorization header's value: `Bearer <token>`. */
  auth: string;
}

export interface CookieSession {
  sessionId: string;
  /** The session cookie as a browser sends it back (`name=value`). */
  cookie: string;
}

export interface SignUpOptions {
  /** Default: a new unique address (see `tag`). */
  email?: string;
  /** The prefix of the made-up address (default `user`). */
  tag?: string;
  /** Default PASSWORD. */
  password?: string;
  /** Display name; absent leaves it unset. */
  name?: string | null;
  /**
   * Marks the address verified in the database once signed up. The API's own way is the mailed code
   * (needs an SMTP server and workers): the tests of verification do that themselves.
   */
  verified?: boolean;
  /** How many sessions (default 1): the registration's, then one sign-in (POST /v1/auth/login) for each further one. */
  sessions?: number;
  /** Extra request headers (e.g. User-Agent). */
  headers?: Record<string, string>;
}

export interface Account {
  userId: string;
  email: string;
  password: string;
  /** The User of the 201 (email_verified as registered: false). */
  user: ApiUser;
}

/** The `name=value` of the live session cookie a response set (`session` or `__Host-session`). */
export function sessionCookieIn(response: Response): string {
  const cookie = response.headers
    .getSetCookie()
    .filter((c) => !/Max-Age=0/i.test(c))
    .map((c) => c.split(';')[0]!)
    .find((c) => /^(__Host-)?session=/.test(c));
  if (!cookie) throw new Error(`no session cookie set: ${JSON.stringify(response.headers.getSetCookie())}`);
  return cookie;
}

/**
 * A new account with a password (POST /v1/auth/register → 201), signed in by the registration: a
 * bearer session by default, a cookie with `transport: 'cookie'`; the account's fields are the
 * registration's session, `sessions` lists it first, then those of the further sign-ins. As
 * registering does, a verification code is issued and its mail queued (sent when workers run).
 */
export async function signUp(t: TestApp, opts?: SignUpOptions & { transport?: 'bearer' }): Promise<Account & BearerSession & { sessions: BearerSession[] }>;
export async function signUp(t: TestApp, opts: SignUpOptions & { transport: 'cookie' }): Promise<Account & CookieSession & { sessions: CookieSession[] }>;
export async function signUp(
  t: TestApp,
  opts: SignUpOptions & { transport?: 'bearer' | 'cookie' } = {},
): Promise<Account & (BearerSession | CookieSession) & { sessions: (BearerSession | CookieSession)[] }> {
  const email = opts.email ?? uniqueEmail(opts.tag);
  const password = opts.password ?? PASSWORD;
  const transport = opts.transport ?? 'bearer';
  const call = t.api.POST('/v1/auth/register', {
    body: { email, password, transport, ...(opts.name !== undefined ? { name: opts.name } : {}) },
    headers: opts.headers,
  });
  const data = await expectStatus(call, 201);
  const { response } = await call;
  if (opts.verified) await t.ctx.db('users').where({ id: data.user.id }).update({ email_verified_at: t.ctx.now() });
  const account = { userId: data.user.id, email, password, user: data.user };
  let first: BearerSession | CookieSession;
  if (transport === 'cookie') first = { sessionId: data.session.id, cookie: sessionCookieIn(response) };
  else if (!data.token) throw new Error('a bearer registration gave no token');
  else first = { sessionId: data.session.id, token: data.token, auth: `Bearer ${data.token}` };
  const sessions = [first];
  for (let i = 1; i < (opts.sessions ?? 1); i++) {
    const { user: _user, ...session } = await login(t, account, transport, opts.headers);
    sessions.push(session);
  }
  return { ...account, ...first, sessions };
}

export interface SignInOptions {
  /** Extra request headers (e.g. User-Agent). */
  headers?: Record<string, string>;
}

/**
 * Signs in with email and password (POST /v1/auth/login → 200, no second factor): a new session,
 * bearer by default, a cookie with `transport: 'cookie'`.
 */
export async function signIn(t: TestApp, who: { email: string; password?: string }, opts?: SignInOptions & { transport?: 'bearer' }): Promise<BearerSession & { user: ApiUser }>;
export async function signIn(t: TestApp, who: { email: string; password?: string }, opts: SignInOptions & { transport: 'cookie' }): Promise<CookieSession & { user: ApiUser }>;
export async function signIn(
  t: TestApp,
  who: { email: string; password?: string },
  opts: SignInOptions & { transport?: 'bearer' | 'cookie' } = {},
): Promise<(BearerSession | CookieSession) & { user: ApiUser }> {
  return login(t, who, opts.transport ?? 'bearer', opts.headers);
}

async function login(
  t: TestApp,
  who: { email: string; password?: string },
  transport: 'bearer' | 'cookie',
  headers: Record<string, string> | undefined,
): Promise<(BearerSession | CookieSession) & { user: ApiUser }> {
  const call = t.api.POST('/v1/auth/login', { body: { email: who.email, password: who.password ?? PASSWORD, transport }, headers });
  const data = await expectStatus(call, 200);
  if (data.mfa_required) throw new Error(`signing in ${who.email} asked for a second factor (${data.methods.join(', ')})`);
  if (transport === 'cookie') return { sessionId: data.session.id, cookie: sessionCookieIn((await call).response), user: data.user };
  if (!data.token) throw new Error('a bearer sign-in gave no token');
  return { sessionId: data.session.id, token: data.token, auth: `Bearer ${data.token}`, user: data.user };
}
