// Resolves the caller from a bearer token or the session cookie, and guards cookie sessions
// against cross-site requests. Which schemes an operation accepts comes from the contract.
import type { Request } from 'express';
import cookieParser from 'cookie-parser';
import type { AppContext } from '../app-context';
import type { Config } from '../config';
import type { Caller } from '../sessions/service';
import { problems } from './problem';
import { commonErrors } from '../errors';

/**
 * Falsy (no credential / not valid) or the caller; `error` when the request must fail with it:
 * the lookup itself failed, or a credential the operation never accepts was sent (see
 * authenticateBearer).
 */
export type AuthResult = { caller: Caller } | { error: unknown } | null;

/** `__Host-<name>` (bound to this host, Secure, Path=/) when the public base URL is https, else `<name>`. */
export function hostCookieName(config: Config, name: string): string {
  return config.publicBaseUrl.startsWith('https:') ? `__Host-${name}` : name;
}

export const sessionCookieName = (config: Config) => hostCookieName(config, 'session');

async function resolve(app: AppContext, token: string | undefined, transport: Caller['transport']): Promise<AuthResult> {
  if (!token) return null;
  try {
    const caller = await app.services.sessions.findLive(token);
    // A token only authenticates through the transport it was issued for.
    return caller && caller.transport === transport ? { caller } : null;
  } catch (error) {
    return { error };
  }
}

/**
 * The operations under /ops take only a bearer token (their security in the contract). An operator
 * who signed in with a browser and tries the cookie would get a bare 401 and no idea why.
 */
const OPS_PREFIX = '/ops/';
const OPS_TAKE_BEARER =
  'Operator endpoints (/ops) take a bearer token, not the session cookie: sign in with POST /v1/auth/login and "transport": "bearer", then send Authorization: Bearer <token>.';

export function authenticateBearer(app: AppContext, req: Request): Promise<AuthResult> {
  const token = bearerToken(req.headers.authorization);
  if (token === undefined && req.path.startsWith(OPS_PREFIX) && readCookie(req, sessionCookieName(app.config)) !== undefined) {
    return Promise.resolve({ error: commonErrors.unauthenticated(OPS_TAKE_BEARER) });
  }
  return resolve(app, token, 'bearer');
}

/** The token of `Bearer <token>`; the scheme name is case-insensitive (RFC 9110, 11.1). */
function bearerToken(header: string | undefined): string | undefined {
  if (!header || header.length <= 7 || header[6] !== ' ' || header.slice(0, 6).toLowerCase() !== 'bearer') return undefined;
  return header.slice(7).trim() || undefined;
}

// Cookies are parsed only for the operations that read one, on first use.
const parseCookies = cookieParser();

/** The request's cookie of that name, if it sent one. */
export function readCookie(req: Request, name: string): string | undefined {
  if (!req.headers.cookie) return undefined;
  if (!req.cookies) parseCookies(req, {} as never, () => undefined); // synchronous
  return (req.cookies as Record<string, string> | undefined)?.[name];
}

export function authenticateCookie(app: AppContext, req: Request): Promise<AuthResult> {
  return resolve(app, readCookie(req, sessionCookieName(app.config)), 'cookie');
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** CSRF: a cookie-authenticated unsafe request must come from an allowed origin (Origin, else Referer). */
export function checkCsrf(config: Config, req: Request): void {
  if (SAFE_METHODS.has(req.method)) return;
  const origin = req.get('origin') ?? originOf(req.get('referer'));
  if (!origin || !config.appOrigins.includes(origin)) {
    throw problems.forbidden('Cross-site request refused: the Origin is not an allowed app origin.');
  }
}

function originOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}
