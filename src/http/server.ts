// The HTTP server around the application: Node's time limits for slow clients, Problem answers to
// requests Node refuses before the application sees them, and a graceful drain for shutdown.
import http from 'node:http';
import net from 'node:net';
import type { Response } from 'express';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { newId } from '../ids';
import { problemBody, reasonPhrase } from './problem';
import { apiSecurityHeaders } from './security-headers';

/**
 * How often Node looks for connections past `headersTimeout` / `requestTimeout`. Node's default
 * is 30 s, which would let a slow-header client stay up to 30 s past its limit; with 1 s a client
 * is cut at most 1 s after it: within 10–11 s with the default HTTP_HEADERS_TIMEOUT_MS.
 */
export const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

/**
 * How long a drain lets idle keep-alive connections live after the server last promised one of
 * them keep-alive, so a client that is about to reuse its connection gets an answer (with
 * `Connection: close`) rather than a reset.
 */
export const DEFAULT_IDLE_GRACE_MS = 1_000;

/** How often a drain closes the connections that are idle once the grace is over. */
const SWEEP_INTERVAL_MS = 100;

interface ServerState {
  /** Responses not yet closed (finished or aborted), with when their request came (0 when nothing measures it). */
  inFlight: Map<http.ServerResponse, bigint>;
  /** Every answer closes its connection (set by a drain, or before one by closeAfterEachAnswer). */
  closing: boolean;
  draining: boolean;
  /** The drain's promise, once one started. */
  drain: Promise<void> | null;
  /** While draining: responses closed since, and when the last keep-alive answer was sent. */
  finishedWhileDraining: number;
  keepAlivePromisedAt: number;
}

const states = new WeakMap<http.Server, ServerState>();

// The same security headers as every application answer (security-headers.ts), taken once.
const SECURITY_HEADERS: string[] = [];
apiSecurityHeaders({ setHeader: (name: string, value: unknown) => SECURITY_HEADERS.push(`${name}: ${String(value)}`) } as unknown as Response);

/** Told of each answer once it is closed, with when its request came (process.hrtime.bigint()). */
export type AnswerObserver = (res: http.ServerResponse, startedAt: bigint) => void;

/**
 * An HTTP server running `handler`, with the time limits of `config.http` and Problem answers for
 * the requests Node refuses itself (headers too large, too slow, unparseable). `observer` (metrics)
 * is called from the close listener every response has here anyway: no listener of its own.
 */
export function createHttpServer(handler: http.RequestListener, config: Pick<Config, 'http'>, logger: Logger, observer?: AnswerObserver): http.Server {
  const server = http.createServer({
    headersTimeout: config.http.headersTimeoutMs,
    requestTimeout: config.http.requestTimeoutMs,
    keepAliveTimeout: config.http.keepAliveTimeoutMs,
    connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
  });
  const state: ServerState = { inFlight: new Map(), closing: false, draining: false, drain: null, finishedWhileDraining: 0, keepAlivePromisedAt: 0 };
  states.set(server, state);

  // Shared by every response: no closure per request.
  function onResponseClose(this: http.ServerResponse) {
    const startedAt = state.inFlight.get(this)!;
    state.inFlight.delete(this);
    if (state.draining) state.finishedWhileDraining++;
    observer?.(this, startedAt);
  }
  // Registered before `handler`, so it runs first: a request that arrives while draining has its
  // `Connection: close` set before the application can send headers.
  server.on('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
    if (state.closing) res.setHeader('Connection', 'close');
    state.inFlight.set(res, observer ? process.hrtime.bigint() : 0n);
    res.on('close', onResponseClose);
  });
  server.on('request', handler);
  server.on('clientError', (err: NodeJS.ErrnoException, socket: net.Socket) => answerClientError(err, socket, server, state, logger));
  return server;
}

const REFUSALS: Record<string, { status: number; code: string; detail: (server: http.Server) => string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    code: 'request_header_fields_too_large',
    detail: () => `The request headers are larger than ${Math.round(http.maxHeaderSize / 1024)} KiB.`,
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    code: 'request_timeout',
    detail: (server) =>
      `The request did not arrive in time: headers are allowed ${server.headersTimeout / 1000} s, the whole request ${server.requestTimeout / 1000} s.`,
  },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: 413, code: 'payload_too_large', detail: () => 'The chunk extensions of the request body are too large.' },
};
const BAD_REQUEST = { status: 400, code: 'bad_request', detail: () => 'The request is not valid HTTP/1.1.' };

/**
 * With a `clientError` listener Node leaves the answer to us (its own is a bare status line):
 * answer a Problem when nothing of a response went out on this socket yet, then close it.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: net.Socket, server: http.Server, state: ServerState, logger: Logger): void {
  // The client is gone, or part of a response was already written: nothing sensible to send.
  if (err.code === 'ECONNRESET' || !socket.writable || responseStarted(state, socket)) {
    socket.destroy();
    return;
  }
  const refusal = REFUSALS[err.code ?? ''] ?? BAD_REQUEST;
  const requestId = newId('req');
  const body = JSON.stringify(problemBody(refusal.status, refusal.code, refusal.detail(server), requestId));
  const head = [
    `HTTP/1.1 ${refusal.status} ${reasonPhrase(refusal.status)}`,
    'Content-Type: application/problem+json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    'Cache-Control: no-store',
    `X-Request-Id: ${requestId}`,
    ...SECURITY_HEADERS,
  ];
  // Destroyed once written (the request cannot be read further); a socket that fails the write
  // is destroyed by its error.
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  socket.once('finish', () => socket.destroy());
  logger.info('request refused', { request_id: requestId, status: refusal.status, code: refusal.code, error: err.code ?? err.message, ip: socket.remoteAddress ?? '' });
}

function responseStarted(state: ServerState, socket: net.Socket): boolean {
  for (const res of state.inFlight.keys()) if (res.socket === socket && res.headersSent) return true;
  return false;
}

/** Requests `server` is answering now (http_requests_in_flight). */
export function answersInFlight(server: http.Server): number {
  return states.get(server)?.inFlight.size ?? 0;
}

/**
 * The start of a delayed shutdown: the server still accepts connections and serves every request,
 * but each answer from now on closes its connection. A keep-alive client (a load balancer's
 * connection pool) then opens a new connection for its next request, which the balancer, told by
 * the failing health check, sends to another instance; by the time the drain starts no connection
 * sits idle here waiting to be reused.
 */
export function closeAfterEachAnswer(server: http.Server): void {
  const state = states.get(server);
  if (!state) throw new Error('closeAfterEachAnswer: the server was not made by createHttpServer');
  state.closing = true;
  for (const res of state.inFlight.keys()) if (!res.headersSent) res.setHeader('Connection', 'close');
}

export interface DrainOptions {
  logger: Logger;
  /** See DEFAULT_IDLE_GRACE_MS. */
  graceMs?: number;
  /**
   * After this long the connections still open (requests not finished) are destroyed and the
   * drain resolves, so the rest of a shutdown gets its time. Unset: wait for them.
   */
  timeoutMs?: number;
}

/**
 * Stops `server` without resetting a connection it promised to keep:
 * - it stops accepting connections at once;
 * - every response from now on closes its connection (`Connection: close`): those of requests in
 *   flight whose headers are not sent yet, and those of requests that arrive later;
 * - idle keep-alive connections may send one more request (answered with `Connection: close`)
 *   until `graceMs` after the last keep-alive answer went out; then those still idle are closed.
 * Resolves once every connection has ended. Calling it again answers the same promise.
 */
export function drainHttpServer(server: http.Server, options: DrainOptions): Promise<void> {
  const state = states.get(server);
  if (!state) throw new Error('drainHttpServer: the server was not made by createHttpServer');
  if (state.drain) return state.drain;
  const { logger, graceMs = DEFAULT_IDLE_GRACE_MS, timeoutMs } = options;
  const started = Date.now();
  state.draining = true;
  state.closing = true;
  state.keepAlivePromisedAt = started; // every idle connection got a keep-alive answer
  const inFlightAtStart = state.inFlight.size;
  for (const res of state.inFlight.keys()) {
    if (!res.headersSent) {
      res.setHeader('Connection', 'close');
    } else {
      // Its headers went out without `Connection: close`: the client may reuse the connection
      // once the response ends, so the grace counts from then.
      res.on('finish', () => (state.keepAlivePromisedAt = Math.max(state.keepAlivePromisedAt, Date.now())));
    }
  }

  let closed = false;
  const serverClosed = new Promise<void>((resolve) => {
    // Not `server.close()`: on Node 20 `http.Server.prototype.close` first calls
    // `closeIdleConnections()`, which destroys connections that just got a keep-alive answer; a
    // client already sending its next request on one sees ECONNRESET. `net.Server`'s close only
    // stops accepting and calls back once every connection has ended. (It also leaves Node's
    // connection checker running, so slow clients are still cut while draining.)
    net.Server.prototype.close.call(server, () => {
      closed = true;
      resolve();
    });
  });

  server.getConnections((_err, open) => {
    logger.info('http draining: no new connections; every response now closes its connection', {
      open_connections: open ?? null,
      requests_in_flight: inFlightAtStart,
      idle_grace_ms: graceMs,
    });
  });
  const sweep = setInterval(() => {
    if (Date.now() - state.keepAlivePromisedAt >= graceMs) server.closeIdleConnections();
  }, Math.min(SWEEP_INTERVAL_MS, Math.max(1, graceMs)));
  const deadline =
    timeoutMs === undefined
      ? null
      : setTimeout(() => {
          server.getConnections((_err, open) => {
            if (closed) return;
            logger.warn('http drain timed out; closing the connections still open', { timeout_ms: timeoutMs, open_connections: open ?? null });
            server.closeAllConnections();
          });
        }, timeoutMs);

  state.drain = serverClosed.then(() => {
    clearInterval(sweep);
    if (deadline) clearTimeout(deadline);
    stopConnectionsChecker(server);
    logger.info('http drained', { duration_ms: Date.now() - started, requests_finished: state.finishedWhileDraining });
  });
  return state.drain;
}

/**
 * `http.Server.prototype.close` would also stop Node's connection checker (an unref'd interval);
 * having bypassed it, stop the interval once the server is closed. Node keeps it under a private
 * symbol: when a Node version names it otherwise, this does nothing (the interval is unref'd and
 * checks an empty list).
 */
function stopConnectionsChecker(server: http.Server): void {
  const key = Object.getOwnPropertySymbols(server).find((s) => s.description === 'http.server.connectionsCheckingInterval');
  if (key) clearInterval((server as unknown as Record<symbol, NodeJS.Timeout>)[key]);
}
