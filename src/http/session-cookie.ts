// The session cookie: set at sign-in, set again when a request moves the session's idle expiry
// forward, cleared at sign-out. Its Max-Age runs to the moment the session ends unless used again
// (src/sessions/expiry.ts), so the browser drops it when the server would refuse it.
import type { Request, Response } from 'express';
import type { Config } from '../config';
import type { Caller } from '../sessions/service';
import { readCookie, sessionCookieName } from './authenticate';

/** `name=value; Path=/; HttpOnly; SameSite=Lax[; Secure]; Max-Age=n` (Secure, and the __Host- name, on https). */
export function sessionCookie(config: Config, value: string, maxAgeSeconds: number): string {
  const secure = config.publicBaseUrl.startsWith('https:');
  return `${sessionCookieName(config)}=${value}; Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}; Max-Age=${maxAgeSeconds}`;
}

/** Max-Age for a cookie that should end at `expiresAt`. */
export const secondsUntil = (expiresAt: Date, now: Date): number => Math.max(0, Math.floor((expiresAt.getTime() - now.getTime()) / 1000));

/**
 * The cookie is set again, with the session's new expiry, when this request extended a cookie
 * session (at most once a minute per session; most requests send no Set-Cookie).
 */
export function refreshSessionCookie(config: Config, req: Request, res: Response, caller: Caller, now: Date): void {
  if (caller.transport !== 'cookie' || !caller.extended) return;
  const token = readCookie(req, sessionCookieName(config));
  if (token) res.setHeader('Set-Cookie', sessionCookie(config, token, secondsUntil(caller.expiresAt, now)));
}

const cookieName = (setCookie: string) => setCookie.slice(0, setCookie.indexOf('='));

/**
 * Adds an answer's own cookies to those already set (a refreshed session cookie): a cookie the
 * answer sets itself (a sign-out clearing the session cookie) replaces the one of the same name.
 */
export function addSetCookies(res: Response, cookies: string | string[]): void {
  const added = Array.isArray(cookies) ? cookies : [cookies];
  const previous = res.getHeader('Set-Cookie');
  if (previous === undefined) {
    res.setHeader('Set-Cookie', added);
    return;
  }
  const names = new Set(added.map(cookieName));
  const kept = (Array.isArray(previous) ? previous : [String(previous)]).filter((c) => !names.has(cookieName(c)));
  res.setHeader('Set-Cookie', [...kept, ...added]);
}
