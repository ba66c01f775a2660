// The production topology in tests: API instances (`serve`) and job workers (`worker`) as real
// processes, all on one database and one Redis key prefix, each instance on a port of its own
// that a replacement reuses (a load balancer's server list names ports).
import { randomBytes } from 'node:crypto';
import { freePort } from './ports';
import { get, start, stopWithSigterm, waitFor, type Proc } from './processes';

const UNLIMITED = '1000000';

/**
 * The environment every process of one deployment shares. Through a load balancer every request
 * comes from its address, so the per-IP limits are raised (they are not what these tests are
 * about); passwords hash at bcrypt's lowest cost, so sign-ins do not starve 2 cores.
 */
export function deploymentEnv(databaseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    NODE_ENV: 'development',
    DATABASE_URL: databaseUrl,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    REDIS_PREFIX: `test:topology:${randomBytes(4).toString('hex')}:`,
    SESSION_SECRET: randomBytes(32).toString('base64url'), // one secret for every instance
    BCRYPT_COST: '4',
    RATE_LIMIT_LOGIN_PER_MINUTE: UNLIMITED,
    RATE_LIMIT_REGISTER_PER_MINUTE: UNLIMITED,
    RATE_LIMIT_EMAIL_PER_15_MINUTES: UNLIMITED,
    RATE_LIMIT_IP_PER_MINUTE: '0',
    ...extra,
  };
}

export interface Instance {
  name: string;
  port: number;
  proc: Proc;
}

/** Starts `serve` on `port` (a free one by default) and waits until /readyz answers 200. */
export async function startInstance(name: string, env: Record<string, string>, port?: number): Promise<Instance> {
  const p = port ?? (await freePort());
  const proc = start(['serve'], { ...env, PORT: String(p), PUBLIC_BASE_URL: `http://127.0.0.1:${p}` });
  await waitFor(`${name} ready (GET /readyz 200)`, async () => (await get(p, '/readyz')).status === 200, 60_000, proc);
  return { name, port: p, proc };
}

/** Starts a `worker` process and waits until its workers run. */
export async function startWorker(env: Record<string, string>): Promise<Proc> {
  const proc = start(['worker'], env);
  await waitFor('job workers started', () => proc.logs().find((l) => l.message === 'job workers started'), 60_000, proc);
  return proc;
}

/**
 * A rolling deploy's step for one instance: SIGTERM, wait for it to exit (after its
 * SHUTDOWN_DELAY_MS and drain), then a new process on the same port, ready. Answers the new
 * instance and the old one's exit.
 */
export async function replaceInstance(old: Instance, env: Record<string, string>, exitWithinMs = 30_000) {
  const exit = await stopWithSigterm(old.proc, exitWithinMs);
  return { instance: await startInstance(old.name, env, old.port), exit };
}
