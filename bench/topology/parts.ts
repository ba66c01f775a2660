// The parts of the production topology the benchmark starts, one small function each, all on
// 127.0.0.1: PgBouncer (transaction mode) before PostgreSQL, a Redis primary + replica + 3
// Sentinels, API instances (RUN_WORKERS=false) and worker processes, haproxy before the instances.
// PgBouncer, Sentinel and haproxy are the test suite's helpers (test/support), so the benchmark
// runs exactly what the topology tests check.
import { PgBouncer, createPooledRole } from '../../test/support/pgbouncer';
import { SentinelGroup } from '../../test/support/sentinel';
import { Haproxy } from '../../test/support/haproxy';
import { startServer, waitFor, type Server } from '../processes';
import { startService, type ServiceOptions } from '../service';

/** What a part adds to every service process's environment, and how to take it down again. */
export interface Part {
  label: string;
  env: NodeJS.ProcessEnv;
  /** Stops the part's processes. */
  stop(): Promise<void>;
  /** After the scratch database is dropped (a role with privileges in it cannot be dropped before). */
  afterDrop?(): Promise<void>;
}

/**
 * The service's requests through PgBouncer in transaction mode, as a role of their own (the
 * pooler's auth file needs its password: DATABASE_APP_URL); migrations keep the direct
 * DATABASE_URL. The role's statement_timeout is the service's default (query timeout − 100 ms):
 * behind a transaction pooler only a role default carries it.
 */
export async function startPooler(database: string, serverConnections: number): Promise<Part> {
  const role = await createPooledRole(900, 'bench_pooled');
  const bouncer = await PgBouncer.start({ users: { [role.name]: role.password }, poolMode: 'transaction', defaultPoolSize: serverConnections, maxClientConn: 1_000 });
  return {
    label: `PgBouncer (transaction mode, ${serverConnections} server connections) on :${bouncer.port}`,
    env: { DATABASE_APP_URL: bouncer.url(role.name, role.password, database), DATABASE_POOLER: 'transaction' },
    stop: () => bouncer.stop(),
    afterDrop: () => role.drop(),
  };
}

/** A Redis primary, a replica and three Sentinels (quorum 2), with passwords, as a production group. */
export async function startSentinelRedis(): Promise<Part> {
  const group = await SentinelGroup.start();
  const primary = await group.primary();
  return {
    label: `Redis primary :${primary.port} + replica + 3 Sentinels (${group.sentinels.map((s) => s.port).join(', ')})`,
    // The group's redis+sentinel:// URL as REDIS_URL, the Sentinels' own password beside it.
    env: { REDIS_URL: group.url, REDIS_SENTINEL_PASSWORD: group.sentinelPassword },
    stop: () => group.stop(),
  };
}

/** API instances with RUN_WORKERS=false, started together, each ready (see startService). */
export function startApis(count: number, options: ServiceOptions): Promise<Server[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => startService(`API instance ${i + 1}`, { ...options, env: { ...options.env, RUN_WORKERS: 'false' } })));
}

/** `worker` processes (job workers only, no HTTP), each ready once it logs that its workers run. */
export function startWorkers(count: number, o: ServiceOptions): Promise<Server[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        NODE_ENV: 'production',
        PUBLIC_BASE_URL: 'http://127.0.0.1', // required in production; a worker serves nothing
        SESSION_SECRET: o.sessionSecret,
        MFA_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
        DATABASE_URL: o.databaseUrl,
        REDIS_URL: o.redisUrl,
        REDIS_PREFIX: o.redisPrefix,
        MAIL_TRANSPORT: 'log',
        LOG_LEVEL: 'info', // its start line says when it runs; a line per job is cheap beside the job
        ...o.env,
      };
      const worker = startServer(`worker ${i + 1}`, process.execPath, [...(o.nodeFlags ?? []), o.mainJs, 'worker'], env, 0);
      await waitFor(worker, async () => worker.output.join('').includes('"job workers started"'));
      return worker;
    }),
  );
}

/** haproxy before `apis`, health-checking /readyz every second; resolves once it sees every one up. */
export async function startBalancer(apis: Server[]): Promise<Haproxy> {
  const proxy = await Haproxy.start(apis.map((api, i) => ({ name: `api${i + 1}`, port: Number(new URL(api.url).port) })));
  for (let i = 0; i < apis.length; i++) await proxy.waitForStatus(`api${i + 1}`, 'UP');
  return proxy;
}
