// Composition root and command line:
//   node dist/src/main.js [serve]              start the API (runs migrations first; job workers too unless RUN_WORKERS=false)
//   node dist/src/main.js worker               run job workers only (no HTTP), to scale them apart
//   node dist/src/main.js migrate              apply database migrations and exit
//   node dist/src/main.js grant-operator EMAIL make an existing account with a verified email an operator
//   node dist/src/main.js revoke-operator EMAIL take the role away again
//   node dist/src/main.js disable-account EMAIL  refuse every sign-in of the account and end its sessions
//   node dist/src/main.js enable-account EMAIL   undo disable-account
// The account commands work on DATABASE_URL, else on the embedded database `npm start` made under
// DATA_DIR; without either they refuse, naming DATABASE_URL. `npm run grant-operator` runs the
// same through tsx in a checkout; the Docker image has only the compiled form.
// First: with OTEL_* set it starts tracing, which must patch pg, ioredis and http before they load.
import { shutdownTracing } from './platform/tracing';
import { ConfigError, loadConfig, type Config } from './config';
import { createLogger, type Logger } from './logger';
import { createDatabase, hasTable, migrateLatest, type Db } from './platform/database';
import { appDatabase, assertSubjectToPolicies, checkStatementTimeout, DatabaseRoleError, provisionAppRole } from './platform/database-roles';
import { embeddedDatabaseExists, embeddedUrl, runningEmbeddedPort, startEmbeddedPostgres, type EmbeddedDatabase } from './platform/embedded-postgres';
import { createRedis, describeRedis, redactUrl } from './platform/redis';
import { buildAppContext } from './app-context-factory';
import { createApp } from './app';
import { Metrics, metricsServer } from './platform/metrics';
import { answersInFlight, closeAfterEachAnswer, createHttpServer, DEFAULT_IDLE_GRACE_MS, drainHttpServer } from './http/server';
import { answerObserver } from './http/request-metrics';
import type { GrantOutcome, RevokeOutcome } from './accounts/operators';
import { Services, type Platform } from './services';
import type { AppContext } from './app-context';
import path from 'node:path';

/** A database to work on: its owner's URL, the embedded server this process started, and its name for messages. */
interface DatabaseTarget {
  url: string;
  embedded: EmbeddedDatabase | null;
  label: string;
}

const embeddedLabel = (config: Config) => `the embedded PostgreSQL under ${path.join(config.dataDir, 'postgres')} (DATABASE_URL is not set)`;

/** DATABASE_URL, else the embedded PostgreSQL under DATA_DIR, started here (and made on first use). */
async function databaseTarget(config: Config, logger: Logger): Promise<DatabaseTarget> {
  if (config.databaseUrl) return { url: config.databaseUrl, embedded: null, label: redactUrl(config.databaseUrl) };
  const embedded = await startEmbeddedPostgres(config.dataDir, config.embeddedPostgresPort, logger);
  return { url: embedded.url, embedded, label: embeddedLabel(config) };
}

/**
 * The account commands work on the database the service already uses: DATABASE_URL, else the
 * embedded one `npm start` made under DATA_DIR (reached on its port while the service runs,
 * started for the command while it does not). Never a new, empty one: it holds no account, and
 * "no account" would send the operator looking for the wrong mistake.
 */
async function existingDatabaseTarget(config: Config, logger: Logger, command: string): Promise<DatabaseTarget> {
  if (config.databaseUrl) return { url: config.databaseUrl, embedded: null, label: redactUrl(config.databaseUrl) };
  if (!embeddedDatabaseExists(config.dataDir)) {
    throw new ConfigError(
      `DATABASE_URL is not set, and there is no embedded database under ${path.join(config.dataDir, 'postgres')} (npm start makes one there when ` +
        `DATABASE_URL is not set). Set DATABASE_URL to the database the service uses and run ${command} again; in the Docker image, ` +
        `run it in the service's container (docker exec <container> node dist/src/main.js ${command} …), which has DATABASE_URL. ` +
        `For a local service started with npm start, run ${command} from the same directory (or set DATA_DIR).`,
    );
  }
  const port = runningEmbeddedPort(config.dataDir);
  if (port !== null) return { url: embeddedUrl(port), embedded: null, label: embeddedLabel(config) };
  const embedded = await startEmbeddedPostgres(config.dataDir, config.embeddedPostgresPort, logger);
  return { url: embedded.url, embedded, label: embeddedLabel(config) };
}

/**
 * The owner's pool (migrations, role grants: a small one, closed once they are done) and the
 * pool requests use, connected as the role row-level security applies to.
 */
async function openDatabase(config: Config, logger: Logger): Promise<{ owner: Db; db: Db; embedded: EmbeddedDatabase | null; label: string }> {
  const { url, embedded, label } = await databaseTarget(config, logger);
  return {
    // Migrations may take long: only the connection is bounded.
    owner: createDatabase(url, 1, logger, { connectMs: config.databaseTimeouts.connectMs }),
    db: createDatabase(appDatabase(config, url), config.databasePoolMax, logger, config.databaseTimeouts, config.databasePooler),
    embedded,
    label,
  };
}

/** As the owner: migrations, then the application role and its grants. */
async function prepareDatabase(owner: Db, config: Config, logger: Logger): Promise<void> {
  await migrateLatest(owner, logger);
  await provisionAppRole(owner, config, logger);
}

/**
 * OPERATOR_EMAILS at start: the listed accounts that are verified and enabled (the rest get the
 * role once they verify). Operators whose email is not verified are named in a warning: nothing
 * here can tell who granted them, so an operator decides (revoke-operator).
 */
async function applyOperatorEmails(app: AppContext): Promise<void> {
  const { granted, unverified } = await app.services.transaction(async (tx) => ({ granted: await tx.operators.grantListed(), unverified: await tx.operators.unverified() }));
  if (granted.length) app.logger.info('operators granted from OPERATOR_EMAILS', { count: granted.length, user_ids: granted });
  if (unverified.length) {
    app.logger.warn('operators whose email is not verified: check them, and revoke-operator those you do not know', { user_ids: unverified });
  }
}

/** Applies migrations, retrying while the database is unreachable (no crash loop). */
async function migrateWhenReachable(app: AppContext, owner: Db, stopped: () => boolean, onReady: () => Promise<void>): Promise<void> {
  for (let attempt = 1; !stopped(); attempt++) {
    try {
      await prepareDatabase(owner, app.config, app.logger);
      await assertSubjectToPolicies(app.db);
      await checkStatementTimeout(app.db, app.config, app.logger);
      await owner.destroy();
      await applyOperatorEmails(app);
      app.state.databaseReady = true;
      app.logger.info('database ready');
      await onReady();
      return;
    } catch (err) {
      // A role that would bypass the policies, or one the service may not create: no retry helps.
      if (err instanceof DatabaseRoleError) throw err;
      const delay = Math.min(1000 * attempt, 10_000);
      app.logger.error('database unreachable; requests that need it answer 503 until it is back', {
        error: err instanceof Error ? err.message : String(err),
        retry_in_ms: delay,
      });
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

async function serve(config: Config, logger: Logger, mode: 'api' | 'worker'): Promise<void> {
  const { owner, db, embedded } = await openDatabase(config, logger);
  const redis = createRedis(config.redis);
  const app = buildAppContext({ config, logger, db, redis });
  // Timeouts from config.http (slow clients are cut), Problem answers for what Node refuses itself.
  // Answers are counted only where something scrapes them (METRICS_PORT): off costs nothing.
  const server = createHttpServer(mode === 'api' ? createApp(app) : (_req, res) => res.writeHead(404).end(), config, logger, answerObserver(app));
  app.metrics.readInFlight(() => answersInFlight(server));
  let stopping = false;
  migrateWhenReachable(app, owner, () => stopping, async () => {
    await app.instance.start(); // records this release and instance, then heartbeats every 15 s
    void app.services.passwords.dummyHash(); // made now, so the first unknown-email sign-in is not slower than others
    await app.runtimeSettings.start(); // operators' overrides of the runtime settings, kept current from now on
    await app.jobs.init(); // also writes the recorded queue pauses into Redis
    if (mode === 'worker' || config.runWorkers) await app.jobs.startWorkers();
  }).catch((err: unknown) => {
    logger.error('cannot serve', { error: err instanceof Error ? err.message : String(err) });
    process.exit(1);
  });
  if (mode === 'api') await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
  // Prometheus scrapes a listener of its own, not the public one (README "Metrics").
  const metrics = config.metricsPort === null ? null : metricsServer(app.metrics);
  if (metrics) {
    app.metrics.collectProcessMetrics();
    await new Promise<void>((resolve) => metrics.listen(config.metricsPort!, config.host, resolve));
    logger.info('metrics listening', { url: `http://${config.host}:${config.metricsPort}/metrics` });
  }
  logger.info(mode === 'api' ? 'listening' : 'worker started', {
    url: `http://${config.host}:${config.port}`,
    public_base_url: config.publicBaseUrl,
    database: embedded ? 'embedded' : redactUrl(config.databaseUrl!),
    redis: describeRedis(config.redis),
    version: config.build.version,
  });

  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    // A load balancer learns of the shutdown from /readyz, checked every second or two: until it
    // has, it still sends requests here, and a closed listener would refuse them. So the API keeps
    // serving for SHUTDOWN_DELAY_MS with /readyz at 503 (each answer closing its connection), then
    // drains. Ctrl-C (SIGINT) at a terminal has no balancer to wait for.
    app.state.shuttingDown = true;
    if (mode === 'api' && signal === 'SIGTERM' && config.shutdownDelayMs > 0) {
      closeAfterEachAnswer(server);
      logger.info('shutting down: /readyz answers 503, still serving while load balancers take this instance out', { signal, delay_ms: config.shutdownDelayMs });
      await new Promise((r) => setTimeout(r, config.shutdownDelayMs));
    }
    logger.info('shutting down: no new connections, finishing in-flight requests', { signal });
    const force = setTimeout(() => {
      logger.error('shutdown timed out; exiting', { timeout_ms: config.shutdownTimeoutMs });
      process.exit(1);
    }, config.shutdownTimeoutMs);
    force.unref();
    // HTTP first: stop accepting, every answer from now on closes its connection, idle keep-alive
    // connections get a short grace for one more request (no reset on a connection we promised to
    // keep). HTTP gets at most 70% of the shutdown time, so workers, mail and pools still stop cleanly.
    if (mode === 'api') {
      await drainHttpServer(server, {
        logger,
        graceMs: Math.min(DEFAULT_IDLE_GRACE_MS, Math.floor(config.shutdownTimeoutMs / 4)),
        timeoutMs: Math.floor(config.shutdownTimeoutMs * 0.7),
      });
    }
    metrics?.close();
    app.dependencies.stop();
    app.runtimeSettings.stop();
    await app.jobs.stop();
    app.mailer.close();
    await app.instance.stop(); // stopped_at: a clean shutdown, not a crash
    await Promise.allSettled([db.destroy(), redis.quit().catch(() => redis.disconnect())]);
    if (embedded) await embedded.stop().catch(() => undefined);
    await shutdownTracing().catch(() => undefined); // exports the spans still buffered (the last requests' and jobs')
    logger.info('stopped');
    process.exit(0);
  };
  embedded?.releaseSignals(); // the shutdown below stops it, last
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/** `migrate`: as the owner, migrations and the application role, then exit. */
async function migrate(config: Config, logger: Logger): Promise<void> {
  const { owner, db, embedded, label } = await openDatabase(config, logger);
  try {
    await prepareDatabase(owner, config, logger);
    logger.info('database migrated', { database: label });
  } finally {
    await Promise.all([owner.destroy(), db.destroy()]);
    if (embedded) await embedded.stop();
  }
}

/**
 * The account commands, as the owner, on the service's existing database. They change rows only:
 * no migrations, and not the application role (the service's own start keeps it).
 */
async function withAccountsDatabase<T>(config: Config, logger: Logger, command: string, fn: (owner: Db) => Promise<T>): Promise<{ result: T; label: string }> {
  const { url, embedded, label } = await existingDatabaseTarget(config, logger, command);
  const owner = createDatabase(url, 1, logger, { connectMs: config.databaseTimeouts.connectMs });
  try {
    let migrated: boolean;
    try {
      migrated = await hasTable(owner, 'users');
    } catch (err) {
      throw new ConfigError(`Could not reach ${label}: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (!migrated) throw new ConfigError(`${label} has no accounts table: it is not the service's database, or the service has never started on it.`);
    return { result: await fn(owner), label };
  } finally {
    await owner.destroy();
    if (embedded) await embedded.stop();
  }
}

/**
 * The services for the account commands: over the owner's connection, with no Redis, job system,
 * mailer or social providers (the account workflows use none; one that reached for them would
 * fail here loudly rather than half-work).
 */
function commandServices(config: Config, logger: Logger, db: Db): Services {
  const absent = (what: string) =>
    new Proxy({}, {
      get() {
        throw new Error(`${what} is not available to the account commands`);
      },
    });
  const parts = { redis: absent('Redis'), jobs: absent('The job system'), mailer: absent('Mail'), runtimeSettings: absent('Runtime settings'), socialProviders: absent('Social sign-in') };
  return new Services({ config, logger, db, now: () => new Date(), metrics: new Metrics(), ...(parts as Omit<Platform, 'config' | 'logger' | 'db' | 'now' | 'metrics'>) });
}

/** What grant-operator / revoke-operator say: a log line when done, a ConfigError (exit 1) when refused. */
function reportOperatorCommand(logger: Logger, config: Config, email: string, outcome: GrantOutcome | RevokeOutcome, label: string): void {
  switch (outcome) {
    case 'granted':
    case 'already_operator':
      logger.info(outcome === 'granted' ? 'operator granted' : 'already an operator', { email, database: label });
      return;
    case 'revoked':
    case 'not_operator': {
      logger.info(outcome === 'revoked' ? 'operator revoked' : 'not an operator', { email, database: label });
      if (config.operatorEmails.includes(email.trim().toLowerCase())) {
        logger.warn('OPERATOR_EMAILS lists this address: the service grants the role again at its next start. Remove it from OPERATOR_EMAILS.', { email });
      }
      return;
    }
    case 'no_account':
      throw new ConfigError(`No account with the email ${email} in ${label}. Register it first, then run this again.`);
    case 'unverified':
      throw new ConfigError(
        `The account ${email} in ${label} has not verified its email address, so nothing proves it belongs to the person you mean. ` +
          'Ask them to verify it (the code mailed at registration, or POST /v1/auth/verify-email/resend), then run this again.',
      );
    case 'disabled':
      throw new ConfigError(`The account ${email} in ${label} is disabled. Enable it first (enable-account), then run this again.`);
  }
}

async function main(argv: string[]): Promise<void> {
  const [command = 'serve', ...args] = argv;
  const config = loadConfig();
  const logger = createLogger(config.logLevel === 'silent' ? 'info' : config.logLevel);
  switch (command) {
    case 'serve':
      return serve(config, logger, 'api');
    case 'worker':
      return serve(config, logger, 'worker');
    case 'migrate':
      return migrate(config, logger);
    case 'grant-operator':
    case 'revoke-operator': {
      const email = args[0];
      if (!email) throw new ConfigError(`usage: ${command} <email>`);
      const { result, label } = await withAccountsDatabase(config, logger, command, (db) => {
        const { operators } = commandServices(config, logger, db);
        return command === 'grant-operator' ? operators.grant(email) : operators.revoke(email);
      });
      reportOperatorCommand(logger, config, email, result, label);
      return;
    }
    case 'disable-account':
    case 'enable-account': {
      const email = args[0];
      if (!email) throw new ConfigError(`usage: ${command} <email>`);
      const disabled = command === 'disable-account';
      const { result, label } = await withAccountsDatabase(config, logger, command, (db) =>
        commandServices(config, logger, db).accounts.setDisabled(email, disabled, { kind: 'operator', id: null }, { via: 'command_line' }),
      );
      if (!result) throw new ConfigError(`No account with the email ${email} in ${label}.`);
      logger.info(disabled ? 'account disabled' : 'account enabled', { email, ...result, database: label });
      return;
    }
    default:
      throw new ConfigError(`Unknown command "${command}". Commands: serve, worker, migrate, grant-operator <email>, revoke-operator <email>, disable-account <email>, enable-account <email>.`);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof DatabaseRoleError) {
    process.stderr.write(`${err.message}\n`);
  } else {
    process.stderr.write(`Start-up failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  }
  process.exit(1);
});
