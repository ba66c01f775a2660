// Writes what an operation's handler returned (headers, status, body) on the response. Its
// cookies join the session cookie the router may have refreshed already instead of replacing it.
import type { Response } from 'express';
import { addSetCookies } from './session-cookie';

type Reply = { status: number; body?: unknown; headers?: Record<string, string | string[]> };

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

const hasNoBody = (reply: Reply) => reply.body === undefined || reply.status === 204 || reply.status === 302;

export function writeReply(res: Response, reply: Reply) {
  if (reply.headers) {
    for (const name in reply.headers) {
      if (name.toLowerCase() === 'set-cookie') addSetCookies(res, reply.headers[name]!);
      else res.setHeader(name, reply.headers[name]!);
    }
  }
  res.statusCode = reply.status;
  if (hasNoBody(reply)) res.end();
  else if (typeof reply.body === 'string' || Buffer.isBuffer(reply.body)) res.send(reply.body);
  else {
    // What res.json does, without its content negotiation and freshness checks (no ETags here).
    if (!res.hasHeader('Content-Type')) res.setHeader('Content-Type', JSON_CONTENT_TYPE);
    // Encoded once, here, as res.send does: handed a string, the socket's writev encodes it into a
    // copy of its own (bench:ops --profile, a 50-event audit page: writev 118 → 74 µs per request).
    const body = Buffer.from(JSON.stringify(reply.body));
    // Node computes Content-Length itself only when it sends the body: a HEAD would go without.
    res.setHeader('Content-Length', body.length);
    res.end(body);
  }
}

/** A reply as the bytes writeReply sends for it: what a keyed request records and replays. */
export interface SerialisedReply {
  status: number;
  headers: Record<string, string>;
  body: Buffer | null;
}

/**
 * The status, headers and body bytes writeReply would send for `reply` (src/http/idempotent-call.ts
 * records them). Only what keyed operations answer: JSON or no body, and no cookie (an answer that
 * sets one would hand it out again on every replay).
 */
export function serialiseReply(reply: Reply): SerialisedReply {
  const headers: Record<string, string> = {};
  for (const name in reply.headers ?? {}) {
    const value = reply.headers![name]!;
    if (name.toLowerCase() === 'set-cookie') throw new Error('an answer that sets a cookie cannot be recorded for replays');
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  if (hasNoBody(reply)) return { status: reply.status, headers, body: null };
  if (typeof reply.body === 'string' || Buffer.isBuffer(reply.body)) throw new Error('only JSON answers are recorded for replays');
  if (!Object.keys(headers).some((name) => name.toLowerCase() === 'content-type')) headers['Content-Type'] = JSON_CONTENT_TYPE;
  return { status: reply.status, headers, body: Buffer.from(JSON.stringify(reply.body)) };
}

/** Writes a serialised reply as it was recorded, plus `extra` headers (a replay's mark). */
export function writeSerialised(res: Response, reply: SerialisedReply, extra: Record<string, string> = {}): void {
  for (const [name, value] of Object.entries({ ...reply.headers, ...extra })) res.setHeader(name, value);
  res.statusCode = reply.status;
  if (!reply.body) return void res.end();
  res.setHeader('Content-Length', reply.body.length);
  res.end(reply.body);
}
