// Resolves the caller from a bearer token or the session cookie, and guards cookie sessions
// against cross-site requests. Which schemes an operation accepts comes from the contract.
import type { Request } from 'express';
import cookieParser from 'cookie-parser';
import type { AppContext } from '../app-context';
import type { Config } from '../config';
import type { Caller } from '../sessions/service';
import { problems } from './problem';

/** Falsy (no credential / not valid) or the caller; `error` when the lookup itself failed. */
export type AuthResult = { caller: Caller } | { error: unknown } | null;

/** `__Host-<name>` (bound to this host, Secure, Path=/) when the public base URL is https, else `<name>`. */
export function hostCookieName(config: Config, name: string): string {
  return config.publicBaseUrl.startsWith('https:') ? `__Host-${name}` : name;
}

export const sessionCookieName = (config: Config) => hostCookieName(config, 'session');

async function resolve(app: AppContext, token: string | undefined, transport: Caller['transport'], secondFactors: boolean): Promise<AuthResult> {
  if (!token) return null;
  try {
    const caller = await app.services.sessions.findLive(token, { secondFactors });
    // A token only authenticates through the transport it was issued for.
    return caller && caller.transport === transport ? { caller } : null;
  } catch (error) {
    return { error };
  }
}

/** `secondFactors`: read the user's second factors with the session (the operations that show them). */
export function authenticateBearer(app: AppContext, req: Request, secondFactors: boolean): Promise<AuthResult> {
  return resolve(app, bearerToken(req.headers.authorization), 'bearer', secondFactors);
}

/**
 * Why a request was not authenticated, when the 401 can say more than "sign in": the session
 * cookie sent to an operation that takes only a bearer token (every /ops one, by the contract),
 * which would otherwise leave an operator signed in through a browser with no idea why.
 */
export function unauthenticatedDetail(app: AppContext, req: Request, acceptsCookie: boolean): string | undefined {
  if (acceptsCookie || req.headers.authorization || readCookie(req, sessionCookieName(app.config)) === undefined) return undefined;
  return 'Operator endpoints (/ops) take a bearer token, not the session cookie: sign in with POST /v1/auth/login and "transport": "bearer", then send Authorization: Bearer <token>.';
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

export function authenticateCookie(app: AppContext, req: Request, secondFactors: boolean): Promise<AuthResult> {
  return resolve(app, readCookie(req, sessionCookieName(app.config)), 'cookie', secondFactors);
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
