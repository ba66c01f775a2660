// The HTTP server (src/http/server.ts), in process: slow clients cut within the configured bound,
// Problem answers for requests Node refuses itself, and a drain that never resets a connection it
// promised to keep.
import http from 'node:http';
import net from 'node:net';
import { loadConfig } from '../../src/config';
import type { Logger } from '../../src/logger';
import type { Response } from 'supertest';
import { createHttpServer, drainHttpServer, CONNECTIONS_CHECKING_INTERVAL_MS } from '../../src/http/server';
import { assertMatchesContract } from '../support/contract-validator';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface LogLine { level: string; message: string; fields: Record<string, unknown> }
type RecordingLogger = Logger & { lines: LogLine[] };
function recordingLogger(): RecordingLogger {
  const lines: LogLine[] = [];
  const at = (level: string) => (message: string, fields: Record<string, unknown> = {}) => void lines.push({ level, message, fields });
  return { lines, info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug'), isInfoEnabled: () => true } as unknown as RecordingLogger;
}

const servers: http.Server[] = [];
const agents: http.Agent[] = [];
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const a of agents.splice(0)) a.destroy();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    if (s.listening) await new Promise((r) => s.close(r));
  }
});

/** A server on 127.0.0.1 with 1 s headers / 2 s request timeouts; `handler` answers after `delay` ms. */
async function start(handler: http.RequestListener = delayed(0), logger: RecordingLogger = recordingLogger()) {
  const config = loadConfig({ NODE_ENV: 'test', HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '2000' });
  const server = createHttpServer(handler, config, logger);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as net.AddressInfo).port, logger };
}

function delayed(ms: number | (() => number)): http.RequestListener {
  return (req, res) => {
    req.resume();
    req.on('end', () => setTimeout(() => res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok'), typeof ms === 'number' ? ms : ms()));
  };
}

interface Answer { status: number; headers: http.IncomingHttpHeaders; body: string; reusedSocket: boolean }
function request(port: number, agent: http.Agent, path = '/'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body, reusedSocket: req.reusedSocket }));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

function keepAliveAgent(): http.Agent {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  agents.push(agent);
  return agent;
}

/** A raw socket; `text()` is everything the server sent, `closed` resolves when it closed the socket. */
async function rawSocket(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  sockets.push(socket);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let raw = '';
  socket.setEncoding('utf8').on('data', (d: string) => (raw += d));
  socket.on('error', () => undefined); // a reset shows as 'close'
  const closed = new Promise<number>((r) => socket.once('close', () => r(Date.now())));
  return { socket, text: () => raw, closed };
}

function parseResponse(raw: string) {
  const end = raw.indexOf('\r\n\r\n');
  const lines = raw.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  return { statusLine: lines[0], status: Number(lines[0]!.split(' ')[1]), headers, body: raw.slice(end + 4) };
}

function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve('connected')));
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

describe('time limits', () => {
  it('uses the configured timeouts, 10 s for headers by default, checked every second', () => {
    const defaults = createHttpServer(delayed(0), loadConfig({ NODE_ENV: 'test' }), recordingLogger());
    expect(defaults.headersTimeout).toBe(10_000);
    expect(defaults.requestTimeout).toBe(30_000);
    expect(defaults.keepAliveTimeout).toBe(65_000);
    // Node's own default is 30 s, which would let a slow client stay up to 30 s past its limit.
    // (Not in @types/node 20's Server type; Node 20 sets it from the createServer option.)
    const checkingInterval = (defaults as unknown as { connectionsCheckingInterval: number }).connectionsCheckingInterval;
    expect(checkingInterval).toBeLessThanOrEqual(1_000);
    expect(checkingInterval).toBe(CONNECTIONS_CHECKING_INTERVAL_MS);

    const custom = createHttpServer(
      delayed(0),
      loadConfig({ NODE_ENV: 'test', HTTP_HEADERS_TIMEOUT_MS: '3000', HTTP_REQUEST_TIMEOUT_MS: '4000', HTTP_KEEP_ALIVE_TIMEOUT_MS: '5000' }),
      recordingLogger(),
    );
    expect([custom.headersTimeout, custom.requestTimeout, custom.keepAliveTimeout]).toEqual([3000, 4000, 5000]);
  });

  it('cuts off a client sending its headers one byte at a time within the headers timeout (1 s here), answering a 408 Problem', async () => {
    const { port, logger } = await start();
    const client = await rawSocket(port);
    const started = Date.now();
    client.socket.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Slow: `);
    const drip = setInterval(() => client.socket.writable && client.socket.write('a'), 200);
    try {
      const closedAt = await client.closed;
      const elapsed = closedAt - started;
      // 1 s headers timeout + up to one 1 s check + slack; never the 90 s of Node's defaults.
      expect(elapsed).toBeGreaterThanOrEqual(900);
      expect(elapsed).toBeLessThan(5_000);
    } finally {
      clearInterval(drip);
    }
    const answer = parseResponse(client.text());
    expect(answer.statusLine).toBe('HTTP/1.1 408 Request Timeout');
    expect(answer.headers['content-type']).toBe('application/problem+json');
    expect(answer.headers.connection).toBe('close');
    const problem = JSON.parse(answer.body);
    expect(problem).toMatchObject({ type: 'about:blank', title: 'Request Timeout', status: 408, code: 'request_timeout' });
    expect(problem.request_id).toMatch(/^req_[0-9a-z]{26}$/);
    expect(answer.headers['x-request-id']).toBe(problem.request_id);
    expect(logger.lines.find((l) => l.message === 'request refused')?.fields).toMatchObject({ status: 408, code: 'request_timeout' });
  });

  it('cuts off a connection that sends nothing at all within the same bound', async () => {
    const { port } = await start();
    const client = await rawSocket(port);
    const started = Date.now();
    expect((await client.closed) - started).toBeLessThan(5_000);
  });

  it('cuts off a client sending its body too slowly within the request timeout (2 s here)', async () => {
    const { port } = await start();
    const client = await rawSocket(port);
    const started = Date.now();
    client.socket.write(`POST / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: 1000\r\n\r\n`);
    const drip = setInterval(() => client.socket.writable && client.socket.write('a'), 200);
    try {
      const elapsed = (await client.closed) - started;
      expect(elapsed).toBeGreaterThanOrEqual(1_900);
      expect(elapsed).toBeLessThan(6_000);
    } finally {
      clearInterval(drip);
    }
    expect(parseResponse(client.text()).status).toBe(408);
  });
});

describe('requests Node refuses itself', () => {
  it('answers headers over 16 KiB with a 431 Problem and closes the connection', async () => {
    const { port } = await start();
    const client = await rawSocket(port);
    client.socket.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`);
    await client.closed;
    const answer = parseResponse(client.text());
    expect(answer.statusLine).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(answer.headers['content-type']).toBe('application/problem+json');
    expect(answer.headers.connection).toBe('close');
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
    expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body));
    const problem = JSON.parse(answer.body);
    expect(problem).toEqual({
      type: 'about:blank',
      title: 'Request Header Fields Too Large',
      status: 431,
      detail: 'The request headers are larger than 16 KiB.',
      code: 'request_header_fields_too_large',
      request_id: expect.stringMatching(/^req_/),
    });
    expect(answer.headers['x-request-id']).toBe(problem.request_id);
    // As the contract describes it: no operation answers it, the shared response (x-status 431) does.
    assertMatchesContract('get', '/', { status: 431, headers: answer.headers, body: problem, text: answer.body } as unknown as Response);
  });

  it('answers a request that is not HTTP with a 400 Problem', async () => {
    const { port } = await start();
    const client = await rawSocket(port);
    client.socket.write('HELLO THERE\r\n\r\n');
    await client.closed;
    const answer = parseResponse(client.text());
    expect(answer.status).toBe(400);
    expect(answer.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(answer.body)).toMatchObject({ status: 400, title: 'Bad Request', code: 'bad_request' });
  });
});

describe('drain', () => {
  // A round of LOOPS clients, each sending requests back to back on its own keep-alive connection;
  // the drain starts once traffic flows. Each client goes on until an answer says
  // `Connection: close` (or a new connection is refused).
  async function loadRound(LOOPS: number) {
    const { server, port, logger } = await start(delayed(() => Math.floor(Math.random() * 20)));
    let drainStartedAt = 0;
    const counts = { responses: 0, refused: 0 };
    const resets: string[] = [];
    const keptAliveAfterDrain: string[] = [];
    const perLoop = new Array<number>(LOOPS).fill(0);

    const loop = async (i: number) => {
      const agent = keepAliveAgent();
      for (;;) {
        const sentAt = Date.now();
        const sentAfterDrain = drainStartedAt > 0;
        try {
          const answer = await request(port, agent, `/?loop=${i}`);
          expect(answer.status).toBe(200);
          counts.responses++;
          perLoop[i]!++;
          if (sentAfterDrain && answer.headers.connection !== 'close') {
            keptAliveAfterDrain.push(`loop ${i} at +${sentAt - drainStartedAt} ms: ${answer.headers.connection}`);
          }
          if (answer.headers.connection === 'close') return;
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
          if (code === 'ECONNREFUSED') {
            counts.refused++;
            return;
          }
          resets.push(`loop ${i}: ${code} ${(err as Error).message}`);
          return;
        }
      }
    };
    const loops = Array.from({ length: LOOPS }, (_, i) => loop(i));
    // Every client has its keep-alive connection and traffic is flowing.
    while (perLoop.some((n) => n < 3)) await sleep(10);

    drainStartedAt = Date.now();
    const drained = drainHttpServer(server, { logger, graceMs: 1_000 });
    const newConnection = await tryConnect(port);
    await Promise.all(loops);
    await drained;
    return { resets, keptAliveAfterDrain, counts, newConnection, drainMs: Date.now() - drainStartedAt, logger };
  }

  it('under concurrent keep-alive load: no connection is reset, every later response closes its connection, new connections are refused', async () => {
    const LOOPS = 20;
    // Several rounds: with the former shutdown (http.Server#close, which closes idle connections
    // at once) most single rounds of this size saw one or more resets; three make a miss unlikely.
    for (let round = 0; round < 3; round++) {
      const { resets, keptAliveAfterDrain, counts, newConnection, drainMs, logger } = await loadRound(LOOPS);
      expect(resets).toEqual([]);
      expect(keptAliveAfterDrain).toEqual([]);
      expect(newConnection).toBe('ECONNREFUSED');
      expect(counts.responses).toBeGreaterThanOrEqual(3 * LOOPS);
      expect(drainMs).toBeLessThan(5_000);

      const started = logger.lines.find((l) => l.message.startsWith('http draining'));
      expect(started?.fields).toMatchObject({ open_connections: LOOPS, idle_grace_ms: 1_000 });
      const done = logger.lines.find((l) => l.message === 'http drained');
      expect(done?.fields.requests_finished).toBeGreaterThanOrEqual(1);
    }
  });

  it('answers a request in flight when the drain starts with Connection: close', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const { server, port, logger } = await start((_req, res) => void released.then(() => res.end('late')));
    const answer = request(port, keepAliveAgent());
    await sleep(100);
    const drained = drainHttpServer(server, { logger });
    release();
    expect((await answer).headers.connection).toBe('close');
    await drained;
    expect(logger.lines.find((l) => l.message === 'http drained')?.fields.requests_finished).toBe(1);
  });

  it('lets an idle keep-alive connection send one more request during the grace, answered with Connection: close', async () => {
    const { server, port, logger } = await start();
    const agent = keepAliveAgent();
    expect((await request(port, agent)).headers.connection).toBe('keep-alive');
    const drained = drainHttpServer(server, { logger, graceMs: 1_000 });
    await sleep(300); // the client comes back on its kept connection after the drain started
    const again = await request(port, agent);
    expect(again).toMatchObject({ status: 200, reusedSocket: true });
    expect(again.headers.connection).toBe('close');
    await drained;
  });

  it('closes an idle keep-alive connection once the grace is over, then resolves', async () => {
    const { server, port, logger } = await start();
    const agent = keepAliveAgent();
    expect((await request(port, agent)).headers.connection).toBe('keep-alive');
    const socket = Object.values(agent.freeSockets).flat()[0]!;
    const socketClosed = new Promise<number>((r) => socket.once('close', () => r(Date.now())));

    const started = Date.now();
    await drainHttpServer(server, { logger, graceMs: 300 });
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(2_000);
    expect((await socketClosed) - started).toBeGreaterThanOrEqual(290);
    expect(server.listening).toBe(false);
  });

  it('gives up on requests still running after timeoutMs, so the rest of a shutdown gets its time', async () => {
    const { server, port, logger } = await start(() => undefined); // never answers
    const answer = request(port, keepAliveAgent()).then(
      () => 'answered',
      (err: NodeJS.ErrnoException) => err.code,
    );
    await sleep(100);
    const started = Date.now();
    await drainHttpServer(server, { logger, graceMs: 100, timeoutMs: 500 });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await answer).toBe('ECONNRESET'); // the request was cut: what the timeout is for
    expect(logger.lines.find((l) => l.message.startsWith('http drain timed out'))?.fields).toMatchObject({ open_connections: 1 });
  });

  it('answers the same promise when called twice', async () => {
    const { server, logger } = await start();
    const first = drainHttpServer(server, { logger });
    expect(drainHttpServer(server, { logger })).toBe(first);
    await first;
  });
});
