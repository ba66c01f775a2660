// Our service as the HTTP benchmarks run it: built (tsc -p tsconfig.build.json), started as a child
// process (`node dist/src/main.js serve`) in production mode on a free port, optionally pinned to a
// CPU; bare baseline servers (a TypeScript file run with `node --import tsx`); a CPU profile of the
// service under load.
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { projectRoot } from '../src/config';
import { formatProfile, summariseProfile } from './http/cpu-profile';
import { freePort, pinned, startServer, stopProcess, waitFor, type Server } from './processes';
import type { WrkResult } from './wrk';

/** Builds the service (unless `build` is false) and returns its entry point, dist/src/main.js. */
export function buildService(build: boolean): string {
  if (build) {
    console.log('building: tsc -p tsconfig.build.json');
    const r = spawnSync(path.join(projectRoot, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.build.json'], { cwd: projectRoot, stdio: 'inherit' });
    if (r.status !== 0) throw new Error('build failed');
  }
  const mainJs = path.join(projectRoot, 'dist/src/main.js');
  if (!fs.existsSync(mainJs)) throw new Error(`${mainJs} is missing: run without --no-build`);
  return mainJs;
}

/** A rate-limit setting high enough that no benchmark's load meets it. */
export const UNLIMITED = '1000000000';

export interface ServiceOptions {
  mainJs: string;
  /** The CPU it is pinned to (null: not pinned). */
  cpu: number | null;
  /** Flags for node before the script (e.g. --cpu-prof). */
  nodeFlags?: string[];
  /** A fresh random one when not given; pass one where instances, or a seed's config, must share it. */
  sessionSecret?: string;
  databaseUrl: string;
  redisUrl: string;
  redisPrefix: string;
  /** An Authorization header of a valid session: the service is ready when GET /v1/auth/me stops answering 503. */
  auth: string;
  /** More environment (e.g. raised rate limits). */
  env?: NodeJS.ProcessEnv;
}

/**
 * Starts our service (NODE_ENV=production, RUN_WORKERS=false, LOG_LEVEL=warn, mail only logged) on
 * a free port and waits until it is ready and its database is marked ready.
 */
export async function startService(name: string, o: ServiceOptions): Promise<Server> {
  const port = await freePort();
  const [cmd, args] = pinned(o.cpu, process.execPath, [...(o.nodeFlags ?? []), o.mainJs, 'serve']);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    SESSION_SECRET: o.sessionSecret ?? randomBytes(32).toString('base64url'),
    MFA_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'), // a fixed bench key: nothing here is kept
    DATABASE_URL: o.databaseUrl,
    REDIS_URL: o.redisUrl,
    REDIS_PREFIX: o.redisPrefix,
    RUN_WORKERS: 'false',
    MAIL_TRANSPORT: 'log', // nothing is sent here
    LOG_LEVEL: 'warn',
    ...o.env,
  };
  const server = startServer(name, cmd, args, env, port);
  await waitFor(server, async () => {
    if ((await fetch(`${server.url}/readyz`)).status !== 200) return false;
    // Migrations checked and the database marked ready: authenticated operations answer.
    return (await fetch(`${server.url}/v1/auth/me`, { headers: { Authorization: o.auth } })).status !== 503;
  });
  return server;
}

/**
 * Starts a bare baseline server (`file`, which listens on PORT and answers GET /v1/ping) with
 * NODE_ENV=production on a free port and waits until it answers.
 */
export async function startBareServer(name: string, file: string, cpu: number | null, env: NodeJS.ProcessEnv = {}, nodeFlags: string[] = []): Promise<Server> {
  const port = await freePort();
  // `node --import tsx`: one process (the tsx CLI would fork a second), so its pid is the server's.
  const [cmd, args] = pinned(cpu, process.execPath, [...nodeFlags, '--import', 'tsx', file]);
  const server = startServer(name, cmd, args, { ...process.env, NODE_ENV: 'production', PORT: String(port), ...env }, port);
  await waitFor(server, async () => (await fetch(`${server.url}/v1/ping`)).status === 200);
  return server;
}

/**
 * Where the service's CPU goes under a load: `start` starts a fresh instance with the given node
 * flags (--cpu-prof into a new folder under `profileDir`), `warmUp` (if any) runs first, then
 * `load`; the instance is stopped and only the load phase of its profile is summarised, under the
 * heading `heading(result of the load)`.
 */
export async function profileService(o: {
  profileDir: string;
  start: (nodeFlags: string[]) => Promise<Server>;
  warmUp?: (server: Server) => Promise<unknown>;
  load: (server: Server) => Promise<WrkResult>;
  heading: (r: WrkResult) => string;
}): Promise<void> {
  const dir = fs.mkdtempSync(path.join(o.profileDir, 'p-'));
  const profiled = await o.start(['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  if (o.warmUp) await o.warmUp(profiled);
  const loadStart = performance.now();
  const r = await o.load(profiled);
  const loadEnd = performance.now();
  await stopProcess(profiled.child);
  const exited = performance.now();
  const file = fs.readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  console.log(o.heading(r));
  if (!file) console.log('  no profile written');
  else {
    // The profile ends at exit: the load phase is [exit - (exited - loadStart), exit - (exited - loadEnd)].
    const window = { fromEndUs: (exited - loadStart) * 1000, toEndUs: (exited - loadEnd) * 1000 };
    for (const l of formatProfile(summariseProfile(path.join(dir, file), window), r.requests)) console.log(`  ${l}`);
  }
}
