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

export function sessionCookieName(config: Config): string {
  return config.publicBaseUrl.startsWith('https:') ? '__Host-session' : 'session';
}

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

export function authenticateBearer(app: AppContext, req: Request): Promise<AuthResult> {
  const header = req.headers.authorization;
  const token = header?.startsWith('Bearer ') ? header.slice(7).trim() : undefined;
  return resolve(app, token, 'bearer');
}

// Cookies are parsed only for operations that accept the session cookie.
const parseCookies = cookieParser();

export function authenticateCookie(app: AppContext, req: Request): Promise<AuthResult> {
  if (!req.headers.cookie) return Promise.resolve(null);
  if (!req.cookies) parseCookies(req, {} as never, () => undefined); // synchronous
  const token = (req.cookies as Record<string, string> | undefined)?.[sessionCookieName(app.config)];
  return resolve(app, token, 'cookie');
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
