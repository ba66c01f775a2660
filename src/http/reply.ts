// Writes what an operation's handler returned (headers, status, body) on the response. Its
// cookies join the session cookie the router may have refreshed already instead of replacing it.
import type { Response } from 'express';
import { addSetCookies } from './session-cookie';

export function writeReply(res: Response, reply: { status: number; body?: unknown; headers?: Record<string, string | string[]> }) {
  if (reply.headers) {
    for (const name in reply.headers) {
      if (name.toLowerCase() === 'set-cookie') addSetCookies(res, reply.headers[name]!);
      else res.setHeader(name, reply.headers[name]!);
    }
  }
  res.statusCode = reply.status;
  if (reply.body === undefined || reply.status === 204 || reply.status === 302) res.end();
  else if (typeof reply.body === 'string' || Buffer.isBuffer(reply.body)) res.send(reply.body);
  else {
    // What res.json does, without its content negotiation and freshness checks (no ETags here).
    if (!res.hasHeader('Content-Type')) res.setHeader('Content-Type', 'application/json; charset=utf-8');
    const json = JSON.stringify(reply.body);
    // Node computes Content-Length itself only when it sends the body: a HEAD would go without.
    res.setHeader('Content-Length', Buffer.byteLength(json));
    res.end(json);
  }
}
