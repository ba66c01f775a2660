// Golden flows through a client generated from openapi.yaml (openapi-typescript + openapi-fetch),
// written as a client team would write them. The SDK test type-checks this file in strict mode
// against the freshly generated types, then runs it against the real service: a contract change
// that breaks client code breaks the build here first.
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from './generated/api';

type Schemas = components['schemas'];
export type ApiClient = ReturnType<typeof createClient<paths>>;

export function apiClient(baseUrl: string, middleware: Middleware[] = [], fetch?: (request: Request) => Promise<Response>): ApiClient {
  const client = createClient<paths>({ baseUrl, ...(fetch ? { fetch } : {}) });
  for (const m of middleware) client.use(m);
  return client;
}

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

function fail(what: string, detail: unknown): never {
  throw new Error(`${what}: ${JSON.stringify(detail)}`);
}

/** register → login (bearer) → me → sessions → revoke another session → logout → 401. */
export async function accountLifecycle(api: ApiClient, email: string, password: string) {
  const registered = await api.POST('/v1/auth/register', { body: { email, password, name: 'Grace Hopper', transport: 'bearer' } });
  if (!registered.data) fail('register', registered.error);

  const login = async () => {
    const { data, error } = await api.POST('/v1/auth/login', { body: { email, password, transport: 'bearer' } });
    if (!data) fail('login', error);
    // 200 and 202 share `data`; the discriminator tells them apart by type.
    if (data.mfa_required) fail('login asked for a second factor', data.methods);
    const success: Schemas['LoginSuccess'] = data;
    if (!success.token) fail('login gave no bearer token', success);
    return { token: success.token, sessionId: success.session.id, expiresAt: success.session.expires_at };
  };
  const first = await login();
  const second = await login();

  const me = await api.GET('/v1/auth/me', { headers: bearer(first.token) });
  if (!me.data) fail('me', me.error);

  const sessions = await api.GET('/v1/auth/sessions', { headers: bearer(first.token), params: { query: { limit: 10 } } });
  if (!sessions.data) fail('sessions', sessions.error);
  const listed = sessions.data.items.map((s: Schemas['Session']) => ({ id: s.id, current: s.current }));

  const revoked = await api.DELETE('/v1/auth/sessions/{id}', { headers: bearer(first.token), params: { path: { id: second.sessionId } } });
  if (revoked.error) fail('revoke', revoked.error);
  const revokedTokenAfter = await api.GET('/v1/auth/me', { headers: bearer(second.token) });

  const loggedOut = await api.POST('/v1/auth/logout', { headers: bearer(first.token) });
  if (loggedOut.error) fail('logout', loggedOut.error);
  const after = await api.GET('/v1/auth/me', { headers: bearer(first.token) });
  if (!after.error) fail('me after logout answered', after.data);

  return {
    userId: me.data.id,
    meEmail: me.data.email,
    first: first.sessionId,
    second: second.sessionId,
    firstExpiresAt: first.expiresAt,
    listed,
    revokeStatus: revoked.response.status,
    revokedTokenStatus: revokedTokenAfter.response.status,
    logoutStatus: loggedOut.response.status,
    afterLogout: { status: after.response.status, code: after.error.code },
  };
}

/** An operator's look at the job system: failing runs (two states at once) and the queues. */
export async function operatorLooksAtJobs(api: ApiClient, operatorToken: string) {
  const runs = await api.GET('/ops/jobs/runs', { headers: bearer(operatorToken), params: { query: { state: ['retryable', 'discarded'], limit: 50 } } });
  if (!runs.data) fail('job runs', runs.error);
  const queues = await api.GET('/ops/queues', { headers: bearer(operatorToken) });
  if (!queues.data) fail('queues', queues.error);
  return {
    runStates: runs.data.items.map((r: Schemas['JobRun']) => r.state),
    runIds: runs.data.items.map((r: Schemas['JobRun']) => r.id),
    queues: queues.data.items.map((q: Schemas['Queue']) => ({ name: q.name, paused: q.paused })),
  };
}

/** A 422 read as a typed ValidationProblem: `errors` is a required array, no optional chaining. */
export async function invalidRegistration(api: ApiClient) {
  const { data, error, response } = await api.POST('/v1/auth/register', { body: { email: 'not-an-email', password: 'short', transport: 'bearer' } });
  if (data) fail('an invalid registration succeeded', data);
  if (error.code !== 'validation_failed' && error.code !== 'password_too_common') fail('expected a 422', error);
  // Narrowed by code to the operation's 422 schema, whose `errors` is required.
  const problem: Schemas['PasswordValidationProblem'] = error;
  const issues: Schemas['ValidationIssue'][] = problem.errors;
  return { status: response.status, code: problem.code, title: problem.title, locations: issues.map((i) => i.location).sort() };
}

/**
 * An error code matched by a switch the compiler checks: every code the contract documents for
 * registering is a case, and `default` is unreachable (a code added to the contract without a
 * case here, or a case for a code it cannot send, fails the type-check).
 */
export function describeRegistrationError(error: NonNullable<Awaited<ReturnType<typeof register>>['error']>): string {
  switch (error.code) {
    case 'email_taken':
      return 'That email already has an account: sign in instead.';
    case 'registration_closed':
      return 'Sign-up is closed.';
    case 'validation_failed':
    case 'password_too_common':
      return `Check: ${error.errors.map((e) => e.location).join(', ')}`;
    case 'rate_limited':
      return 'Too many attempts: wait a little.';
    case 'malformed_body':
    case 'unsupported_media_type':
    case 'payload_too_large':
      return 'The app sent a bad request.';
    case 'internal':
    case 'unavailable':
      return `The service is in trouble (quote ${error.request_id}).`;
    default: {
      const unreachable: never = error;
      return unreachable;
    }
  }
}

export function register(api: ApiClient, email: string, password: string) {
  return api.POST('/v1/auth/register', { body: { email, password, transport: 'bearer' } });
}

/** The same email twice: the second answer's code, through the typed switch. */
export async function duplicateRegistration(api: ApiClient, email: string, password: string) {
  const first = await register(api, email, password);
  if (!first.data) fail('first registration', first.error);
  const second = await register(api, email, password);
  if (!second.error) fail('second registration succeeded', second.data);
  return { status: second.response.status, code: second.error.code, message: describeRegistrationError(second.error) };
}

/** An organisation created through a client that may have retried (retrying.ts): one call, one organisation. */
export async function createOrg(api: ApiClient, token: string, name: string) {
  const { data, error, response } = await api.POST('/v1/orgs', { headers: bearer(token), body: { name } });
  if (!data) fail('create organisation', error);
  return { status: response.status, id: data.id, replayed: response.headers.get('Idempotent-Replayed') };
}

/** Signs out (a write that takes no key: never retried). */
export async function logout(api: ApiClient, token: string) {
  const { response } = await api.POST('/v1/auth/logout', { headers: bearer(token) });
  return response.status;
}
