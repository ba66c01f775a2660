// PostgreSQL and Redis as dependencies that can fail: which errors mean "down" (the one place that
// decides it), and the monitor that logs an outage once when it starts and once when it ends.
import type { Logger } from '../logger';

const DEPENDENCIES = ['database', 'redis'] as const;
export type Dependency = (typeof DEPENDENCIES)[number];

/** Thrown by our own code when it knows a dependency is unreachable without asking it. */
export class DependencyUnavailable extends Error {
  constructor(
    readonly dependency: Dependency,
    message: string,
  ) {
    super(message);
    this.name = 'DependencyUnavailable';
  }
}

// SQLSTATEs of a database that is going away, overloaded or cancelling a statement that ran past
// statement_timeout: class 08 (connection exception) is matched by prefix.
const DATABASE_STATES = new Set(['57P01', '57P02', '57P03', '53300', '57014']);
// node-postgres and knex messages for a connection that could not be made, was lost, or a query
// that got no answer within query_timeout. Through knex they follow the statement's text and " - "
// ("BEGIN; - Query read timeout": a transaction that could not start, a pooler with no server
// connection to give); the pools compile no bound value into that text (database.ts), and a
// server's error (which may quote a value) has a SQLSTATE, never one of these.
const DATABASE_MESSAGES = /(?:^| - )(Query read timeout|timeout expired|Connection terminated|Client has encountered a connection error|Client was closed)/;
// ioredis: a command with no answer within commandTimeout, no connection (offline queue off), a
// connection lost with commands pending, no Sentinel answering; and a write that reached a primary
// a failover has just demoted (the connection then reconnects to the new master).
const REDIS_MESSAGES = /^(Command timed out|Stream isn't writeable|Connection is closed|Reached the max retries per request|All sentinels are unreachable|READONLY )/;
// Node's socket errors: which dependency they come from is not in the error; the database is the
// only one whose driver surfaces them to callers (ioredis reports them on its 'error' event).
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EPIPE', 'EAI_AGAIN']);

/**
 * Which dependency `err` says is unreachable, or null when it is something else (a bug, a
 * constraint violation…). Duck-typed, not `instanceof`: errors from node's own modules may come
 * from another realm.
 */
export function unavailableDependency(err: unknown): Dependency | null {
  if (typeof err !== 'object' || err === null) return null;
  if (err instanceof DependencyUnavailable) return err.dependency;
  const { code, name = '', message = '' } = err as { code?: unknown; name?: string; message?: string };
  if (name === 'MaxRetriesPerRequestError' || REDIS_MESSAGES.test(message)) return 'redis';
  // A MULTI refused as a whole because its commands were (READONLY, no connection): theirs is the cause.
  const { previousErrors } = err as { previousErrors?: unknown };
  if (message.startsWith('EXECABORT') && Array.isArray(previousErrors) && previousErrors.some((e) => unavailableDependency(e) === 'redis')) return 'redis';
  if (name === 'KnexTimeoutError' || (code === undefined && DATABASE_MESSAGES.test(message))) return 'database';
  if (typeof code === 'string' && (DATABASE_STATES.has(code) || code.startsWith('08') || SOCKET_CODES.has(code))) return 'database';
  return null;
}

/** A socket error or a failure `unavailableDependency` recognises: for a connection known to be Redis's. */
export function isConnectionFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return unavailableDependency(err) !== null || (typeof code === 'string' && SOCKET_CODES.has(code));
}

/** Where parts that hold their own connections report a dependency failing and answering again. */
export type DependencyReporter = Pick<DependencyMonitor, 'failed' | 'up'>;

/**
 * Reports a Redis connection's events: a connection failure on 'error', an answer on 'ready'.
 * Other errors are left to the connection's other listeners.
 */
export function reportRedisConnection(connection: { on(event: 'error' | 'ready', listener: (err?: Error) => void): unknown }, reporter: DependencyReporter): void {
  connection.on('error', (err) => {
    if (isConnectionFailure(err)) reporter.failed('redis', err);
  });
  connection.on('ready', () => reporter.up('redis'));
}

interface Outage {
  since: number;
  refused: number;
  probe: NodeJS.Timeout | null;
}

export interface DependencyMonitorOptions {
  logger: Logger;
  /** A cheap round trip to each dependency; resolves when it answers. */
  probes: Record<Dependency, () => Promise<unknown>>;
  /** How often a dependency known to be down is probed (default 1 s). */
  probeIntervalMs?: number;
}

/**
 * Knows which dependencies are down. The first failure of an outage logs one error line; each
 * request refused meanwhile is counted, not logged; a probe every second notices the end and logs
 * one line with the outage's length and the count. A 'ready' event (Redis) may end it sooner.
 */
export class DependencyMonitor {
  private readonly outages = new Map<Dependency, Outage>();
  /** Milliseconds of the outages that have ended, per dependency (metrics). */
  private readonly downMs = new Map<Dependency, number>();
  private stopped = false;

  constructor(private readonly opts: DependencyMonitorOptions) {}

  isDown(dependency: Dependency): boolean {
    return this.outages.has(dependency);
  }

  /**
   * `dependency` failed. `request`: a request was refused because of it (counted); background
   * work and connection events are not.
   */
  failed(dependency: Dependency, err: unknown, { request = false } = {}): void {
    let outage = this.outages.get(dependency);
    if (!outage) {
      outage = { since: Date.now(), refused: 0, probe: null };
      this.outages.set(dependency, outage);
      this.opts.logger.error('dependency down: requests that need it answer 503 until it is back', {
        dependency,
        error: describe(err),
      });
      this.scheduleProbe(dependency, outage);
    }
    if (request) outage.refused++;
  }

  /** `dependency` answered: ends its outage, if any, with one line. */
  up(dependency: Dependency): void {
    const outage = this.outages.get(dependency);
    if (!outage) return;
    if (outage.probe) clearTimeout(outage.probe);
    this.outages.delete(dependency);
    this.downMs.set(dependency, (this.downMs.get(dependency) ?? 0) + Date.now() - outage.since);
    this.opts.logger.info('dependency back', { dependency, outage_ms: Date.now() - outage.since, refused_requests: outage.refused });
  }

  /** Each dependency: up or not, and its seconds of outage since start (the one under way included). */
  states(): { name: Dependency; up: boolean; outageSeconds: number }[] {
    const now = Date.now();
    return DEPENDENCIES.map((name) => {
      const outage = this.outages.get(name);
      return { name, up: !outage, outageSeconds: ((this.downMs.get(name) ?? 0) + (outage ? now - outage.since : 0)) / 1000 };
    });
  }

  stop(): void {
    this.stopped = true;
    for (const outage of this.outages.values()) if (outage.probe) clearTimeout(outage.probe);
  }

  private scheduleProbe(dependency: Dependency, outage: Outage): void {
    if (this.stopped) return;
    outage.probe = setTimeout(() => {
      outage.probe = null;
      this.opts.probes[dependency]().then(
        () => this.up(dependency),
        () => {
          if (this.outages.get(dependency) === outage) this.scheduleProbe(dependency, outage);
        },
      );
    }, this.opts.probeIntervalMs ?? 1_000);
    outage.probe.unref();
  }
}

/** The error's message without a stack (drivers' messages name hosts and ports, never secrets). */
function describe(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}
