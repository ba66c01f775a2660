// A rolling deploy through a real load balancer drops nothing (issue 23, item 3): Debian's haproxy
// (health checks on /readyz, no retries: see test/support/haproxy.ts) in front of three `serve`
// processes on one database and Redis prefix, under continuous mixed load from keep-alive clients,
// while each instance in turn gets SIGTERM, exits, and is replaced by a new process on its port.
// Every request must get the answer its operation gives when all is well, from one of the
// instances, and no client may see a connection error.
import http from 'node:http';
import knex, { type Knex } from 'knex';
import { cloneTemplateDatabase, databaseUrl, dropDatabase } from '../support/databases';
import { assertMatchesContract } from '../support/contract-validator';
import { Haproxy } from '../support/haproxy';
import { killAll, sleep, waitFor } from '../support/processes';
import { deploymentEnv, replaceInstance, startInstance, type Instance } from '../support/topology';

jest.setTimeout(180_000);

const PASSWORD = 'correct horse battery staple';
const CLIENTS = 6;
/** haproxy checks every second and takes a server out after one failed check (fall 1). */
const CHECK_INTERVAL_MS = 1_000;
/** Covers one check interval plus one check's timeout (2 intervals), with a second to spare. */
const SHUTDOWN_DELAY_MS = 4 * CHECK_INTERVAL_MS;

interface Outcome {
  op: string;
  status: number | null;
  servedBy: string | null;
  error: string | null;
}

/** Keep-alive clients against haproxy, as a browser's or a mobile app's would be. */
class Load {
  readonly outcomes: Outcome[] = [];
  private running = true;
  private readonly loops: Promise<void>[] = [];
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });

  constructor(
    private readonly port: number,
    private readonly db: Knex,
  ) {}

  start(): void {
    for (let i = 0; i < CLIENTS; i++) this.loops.push(this.client(i));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    this.agent.destroy();
  }

  /** One user's session: sign up, verified, then a mix of reads and writes until stopped. */
  private async client(n: number): Promise<void> {
    const email = `client${n}-${Date.now()}@example.com`;
    const signedUp = await this.send('register', 'POST', '/v1/auth/register', 201, { body: { email, password: PASSWORD, transport: 'bearer' } });
    if (!signedUp) return;
    await this.db('users').where({ email }).update({ email_verified_at: new Date() }); // creating organisations needs it
    const auth = { Authorization: `Bearer ${signedUp.token}` };
    for (let round = 0; this.running; round++) {
      await this.send('ping', 'GET', '/v1/ping', 200);
      await this.send('me', 'GET', '/v1/auth/me', 200, { headers: auth });
      await this.send('create org', 'POST', '/v1/orgs', 201, { headers: auth, body: { name: `Org ${n}-${round}` } });
      await this.send('list orgs', 'GET', '/v1/orgs?limit=5', 200, { headers: auth });
      await this.send('login', 'POST', '/v1/auth/login', 200, { body: { email, password: PASSWORD, transport: 'bearer' } });
      if (round % 5 === 0) {
        await this.send('register', 'POST', '/v1/auth/register', 201, { body: { email: `extra${n}-${round}-${Date.now()}@example.com`, password: PASSWORD, transport: 'bearer' } });
      }
      await sleep(10); // leaves the 2 cores some room for the instances being started
    }
  }

  /** Sends one request and records what came back; answers the body when the status is `expected`. */
  private send(op: string, method: string, path: string, expected: number, opts: { headers?: Record<string, string>; body?: unknown } = {}): Promise<any> {
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    return new Promise((resolve) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: this.port,
          method,
          path,
          agent: this.agent,
          timeout: 15_000,
          headers: { ...(payload ? { 'Content-Type': 'application/json' } : {}), ...opts.headers },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (d: string) => (text += d));
          res.on('error', (err) => this.record({ op, status: null, servedBy: null, error: err.message }, resolve));
          res.on('end', () => {
            let body: unknown = text;
            try {
              body = JSON.parse(text);
            } catch {
              /* haproxy's own error pages are HTML */
            }
            const servedBy = (res.headers['x-served-by'] as string | undefined) ?? null;
            let error: string | null = null;
            if (res.statusCode !== expected) error = `${res.statusCode} ${text.slice(0, 200)}`;
            else {
              try {
                assertMatchesContract(method, path, { status: res.statusCode, headers: res.headers, body, text } as any);
              } catch (err) {
                error = `contract: ${(err as Error).message.slice(0, 300)}`;
              }
            }
            this.record({ op, status: res.statusCode!, servedBy, error }, resolve, error ? null : body);
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', (err: NodeJS.ErrnoException) => this.record({ op, status: null, servedBy: null, error: err.code ?? err.message }, resolve));
      req.end(payload);
    });
  }

  private record(outcome: Outcome, resolve: (body: any) => void, body: any = null): void {
    this.outcomes.push(outcome);
    resolve(body);
  }
}

/** A request line of the load's (haproxy's health checks are logged too). */
const isClientRequest = (l: Record<string, any>) => l.message === 'request' && l.route !== '/readyz';

let dbName: string;
let db: Knex;
let proxy: Haproxy | null = null;
beforeAll(async () => {
  dbName = await cloneTemplateDatabase();
  db = knex({ client: 'pg', connection: databaseUrl(dbName), pool: { min: 0, max: 2 } });
});
afterAll(async () => {
  await proxy?.stop();
  await killAll();
  await db?.destroy();
  if (dbName) await dropDatabase(dbName);
});

it('replaces each of three instances behind haproxy under load: every request answered, none failed, no connection error', async () => {
  const env = deploymentEnv(databaseUrl(dbName), { SHUTDOWN_DELAY_MS: String(SHUTDOWN_DELAY_MS) });
  const instances: Instance[] = await Promise.all(['api1', 'api2', 'api3'].map((name) => startInstance(name, env)));
  proxy = await Haproxy.start(instances, { checkIntervalMs: CHECK_INTERVAL_MS });
  for (const i of instances) await proxy.waitForStatus(i.name, 'UP');

  const load = new Load(proxy.port, db);
  load.start();
  await waitFor('the load to reach every instance', () => new Set(load.outcomes.map((o) => o.servedBy)).size >= 3, 20_000);

  const exits = [];
  const olds = [...instances];
  for (const [n, old] of olds.entries()) {
    const { instance, exit } = await replaceInstance(old, env);
    exits.push(exit);
    instances[n] = instance;
    await proxy.waitForStatus(instance.name, 'UP');
    // The new process takes its share before the next one goes.
    await waitFor(`${instance.name} (new) to serve requests`, () => instance.proc.logs().some(isClientRequest), 20_000);
  }
  await load.stop();

  const failed = load.outcomes.filter((o) => o.error !== null);
  const byError = failed.reduce<Record<string, number>>((acc, o) => ((acc[`${o.op}: ${o.error!.slice(0, 80)}`] = (acc[`${o.op}: ${o.error!.slice(0, 80)}`] ?? 0) + 1), acc), {});
  const servedBy = load.outcomes.reduce<Record<string, number>>((acc, o) => ((acc[o.servedBy ?? 'none'] = (acc[o.servedBy ?? 'none'] ?? 0) + 1), acc), {});
  // Requests each old process answered after SIGTERM, before haproxy's check took it out.
  const servedWhileLeaving = olds.map((old) => {
    const logs = old.proc.logs();
    const from = logs.findIndex((l) => String(l.message).startsWith('shutting down'));
    return logs.slice(from).filter(isClientRequest).length;
  });
  console.log(`rolling deploy: ${load.outcomes.length} requests, ${failed.length} failed`, { servedBy, servedWhileLeaving, byError });

  expect(exits).toEqual([0, 1, 2].map(() => ({ code: 0, signal: null })));
  expect(load.outcomes.length).toBeGreaterThan(300);
  expect(byError).toEqual({});
  expect(load.outcomes.filter((o) => !['api1', 'api2', 'api3'].includes(o.servedBy ?? ''))).toEqual([]);
  // Each old process waited for haproxy (serving meanwhile), then drained and stopped cleanly.
  for (const old of olds) {
    const messages = old.proc.logs().map((l) => l.message);
    expect(messages).toEqual(expect.arrayContaining([expect.stringMatching(/^shutting down: \/readyz answers 503/), 'http drained', 'stopped']));
  }
});
