// A real application for one test file: its own database cloned from the migrated template,
// the real Redis under its own key prefix, and an HTTP client that checks every response
// against openapi.yaml.
import supertest from 'supertest';
import type { RequestListener } from 'node:http';
import { cloneTemplateDatabase, databaseUrl, dropDatabase, migrateAndGrant } from './databases';
import { assertMatchesContract } from './contract-validator';
import { apiClient, type ApiClient } from './api-client';
import { loadConfig, type Config } from '../../src/config';
import { createLogger, type Logger } from '../../src/logger';
import { randomUUID } from 'node:crypto';
import { createDatabase } from '../../src/platform/database';
import { appDatabase } from '../../src/platform/database-roles';
import { grantAppRole } from './databases';
import { pooledSuiteSettings } from './pgbouncer';
import { createRedis } from '../../src/platform/redis';
import { buildAppContext } from '../../src/app-context-factory';
import type { JobKind } from '../../src/jobs/kinds';
import type { JobTiming } from '../../src/jobs/timing';
import { createApp } from '../../src/app';
import type { AppContext } from '../../src/app-context';

export interface TestApp {
  ctx: AppContext;
  server: RequestListener;
  http: ContractClient;
  /** The same app through a client typed from the contract (api-client.ts), checked alike. */
  api: ApiClient;
  /** Moves the injectable clock. */
  clock: { now: Date; advance(ms: number): void };
  close(): Promise<void>;
}

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete' | 'head' | 'options';
export type ContractClient = Record<Method, (url: string) => supertest.Test>;

export function contractClient(server: RequestListener): ContractClient {
  const agent = supertest(server);
  const make = (method: Method) => (url: string) =>
    agent[method](url).expect((res) => {
      if (method !== 'head' && method !== 'options') assertMatchesContract(method, url, res);
    });
  return { get: make('get'), post: make('post'), put: make('put'), patch: make('patch'), delete: make('delete'), head: make('head'), options: make('options') };
}

export interface TestAppOptions {
  /** Start the job workers, sweeper and schedules (off by default: most tests only need HTTP). */
  workers?: boolean;
  /** Extra job kinds for the test (e.g. one that sleeps or fails). */
  jobKinds?: JobKind<AppContext>[];
  /** Job backoff, sweep interval… (e.g. `{ backoffMs: 50 }`: retries in milliseconds, not seconds). */
  jobTiming?: Partial<JobTiming>;
  /** A logger of the test's own (e.g. one that keeps every line, to search them). */
  logger?: Logger;
  /**
   * A database of the test's own (the owner's URL, e.g. a private cluster's) instead of a clone of
   * the template: migrated and granted here, and left alone by `close`.
   */
  databaseUrl?: string;
  /**
   * Requests through a transaction pooler (e.g. a test's PgBouncer): DATABASE_APP_URL is
   * `pooler(database)` for the clone's name, with DATABASE_POOLER=transaction.
   */
  pooler?: (database: string) => string;
}

export async function startTestApp(overrides: Partial<Record<string, string>> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const name = options.databaseUrl ? null : await cloneTemplateDatabase();
  if (options.databaseUrl) await migrateAndGrant(options.databaseUrl);
  const config: Config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: options.databaseUrl ?? databaseUrl(name!),
    REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_PREFIX: `test:${name ?? randomUUID()}:`,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    // Bounds far above what a loaded test machine needs (the outage tests set short ones).
    DATABASE_CONNECT_TIMEOUT_MS: '10000',
    DATABASE_QUERY_TIMEOUT_MS: '20000',
    REDIS_CONNECT_TIMEOUT_MS: '10000',
    REDIS_COMMAND_TIMEOUT_MS: '10000',
    // TEST_DATABASE_POOLER=pgbouncer: requests through the run's PgBouncer (transaction mode).
    ...(name ? pooledSuiteSettings(name) : {}),
    ...(name && options.pooler ? { DATABASE_APP_URL: options.pooler(name), DATABASE_POOLER: 'transaction' } : {}),
    ...overrides,
  });
  // A role an operator manages (DATABASE_APP_URL) gets its grants on this clone, as at a start.
  if (name && config.databaseApp.url) await grantAppRole(config);
  const logger = options.logger ?? createLogger(config.logLevel);
  // Requests run as the application role, as in production (row-level security applies).
  const db = createDatabase(appDatabase(config, config.databaseUrl!), 5, logger, config.databaseTimeouts, config.databasePooler);
  const redis = createRedis(config.redis);
  const clock = {
    now: new Date(),
    advance(ms: number) {
      this.now = new Date(this.now.getTime() + ms);
    },
  };
  const ctx = buildAppContext({ config, logger, db, redis, now: () => clock.now, extraJobKinds: options.jobKinds, jobTiming: options.jobTiming });
  ctx.state.databaseReady = true;
  await ctx.runtimeSettings.start();
  await ctx.jobs.init();
  if (options.workers) await ctx.jobs.startWorkers();
  const server = createApp(ctx);
  const http = contractClient(server);
  return {
    ctx,
    server,
    http,
    api: apiClient(http),
    clock,
    async close() {
      await stopContext(ctx);
      if (name) await dropDatabase(name);
    },
  };
}

/**
 * Another instance of the service beside a test app (another process, in effect): the same
 * database and Redis key prefix, its own pools and job system (with the test app's job timing),
 * no workers. `redisUrl` points it at another Redis (a closed port, a proxy the test takes down).
 */
export async function startPeer(t: TestApp, options: { redisUrl?: string; jobKinds?: JobKind<AppContext>[] } = {}) {
  const redis = options.redisUrl ? { ...t.ctx.config.redis, url: options.redisUrl, sentinel: null } : t.ctx.config.redis;
  const config = { ...t.ctx.config, redis };
  const ctx = buildAppContext({
    config,
    logger: t.ctx.logger,
    db: createDatabase(appDatabase(config, config.databaseUrl!), 2, undefined, config.databaseTimeouts, config.databasePooler),
    redis: createRedis(config.redis),
    now: t.ctx.now,
    extraJobKinds: options.jobKinds,
    jobTiming: t.ctx.jobs.timing,
  });
  ctx.state.databaseReady = true;
  await ctx.runtimeSettings.start();
  await ctx.jobs.init();
  return { ctx, close: () => stopContext(ctx) };
}

async function stopContext(ctx: AppContext): Promise<void> {
  ctx.dependencies.stop();
  ctx.runtimeSettings.stop();
  await ctx.jobs.stop();
  ctx.mailer.close();
  ctx.redis.disconnect();
  await ctx.db.destroy();
}
