// Who the caller is, as an operation's security requirements say: each scheme the requirements
// name is tried (authenticate.ts resolves the credentials), then the requirements, the operator
// role and the CSRF check decide whether the request may go on.
import type { Request } from 'express';
import type { AppContext } from '../app-context';
import type { OperationInfo } from '../contract';
import type { Caller } from '../sessions/service';
import { problems } from './problem';
import { authenticateBearer, authenticateCookie, checkCsrf, unauthenticatedDetail, type AuthResult } from './authenticate';

type SchemeName = 'bearerAuth' | 'sessionCookie';
const AUTHENTICATORS: Record<SchemeName, (app: AppContext, req: Request, secondFactors: boolean) => Promise<AuthResult>> = {
  bearerAuth: authenticateBearer,
  sessionCookie: authenticateCookie,
};

/**
 * The operations whose answers show the caller's second factors (the User's `mfa`): only their
 * session lookup reads them (three more index probes); elsewhere shownSecondFactors throws.
 */
const SHOWS_SECOND_FACTORS = new Set(['getMe', 'verifyEmail']);

/** What authentication reads of a route, compiled once by securityOf. */
export interface SecuredRoute {
  info: OperationInfo;
  /** Every scheme named by the requirements, bearer first (it wins when a request carries both). */
  schemes: SchemeName[];
  operatorOnly: boolean;
  /** Its session lookup reads the caller's second factors (SHOWS_SECOND_FACTORS). */
  secondFactors: boolean;
  /** The requirements (alternatives), each as the schemes it needs together; `[]` for `{}`. */
  requirements: SchemeName[][];
}

export function securityOf(info: OperationInfo): Pick<SecuredRoute, 'schemes' | 'operatorOnly' | 'secondFactors' | 'requirements'> {
  const named = new Set(info.security.flatMap((r) => Object.keys(r)));
  return {
    schemes: (['bearerAuth', 'sessionCookie'] as const).filter((s) => named.has(s)),
    operatorOnly: info.roles.includes('operator'),
    secondFactors: SHOWS_SECOND_FACTORS.has(info.operationId),
    requirements: info.security.map((requirement) => Object.keys(requirement) as SchemeName[]),
  };
}

/**
 * Runs the operation's security schemes (bearer first); the requirements are
 * alternatives, each satisfied when all its schemes found a caller. Then role and CSRF checks.
 * An operation whose requirements include `{}` answers callers and anonymous requests alike.
 */
export async function authenticate(app: AppContext, route: SecuredRoute, req: Request): Promise<Caller | null> {
  // One after the other: a request rarely carries both credentials, and a scheme whose credential
  // is absent answers at once.
  const results: Partial<Record<SchemeName, AuthResult>> = {};
  for (const scheme of route.schemes) results[scheme] = await AUTHENTICATORS[scheme](app, req, route.secondFactors);
  // A credential that could not be looked up (database down) is neither valid nor invalid: the
  // request fails (503), never 401, which would tell a client its session is gone.
  for (const scheme of route.schemes) {
    const result = results[scheme];
    if (result && 'error' in result) throw result.error;
  }
  const found = (r: AuthResult | undefined): r is { caller: Caller } => Boolean(r && 'caller' in r);
  const authorized = route.requirements.some((schemes) => schemes.every((scheme) => found(results[scheme])));
  let caller: Caller | null = null;
  for (const scheme of route.schemes) {
    const result = results[scheme];
    if (found(result)) {
      caller = result.caller;
      break;
    }
  }
  if (caller) {
    if (route.operatorOnly && !caller.operator) throw problems.forbidden('Only operators may use /ops.');
    if (caller.transport === 'cookie') checkCsrf(app.config, req);
  }
  if (!authorized && route.requirements.length) throw problems.unauthenticated(unauthenticatedDetail(app, req, route.schemes.includes('sessionCookie')));
  return caller;
}
