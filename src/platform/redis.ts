import Redis, { SentinelConnector, type RedisOptions } from 'ioredis';
import { createHash } from 'node:crypto';

export type RedisClient = Redis;

export interface RedisTimeouts {
  connectMs: number;
  /** A command unanswered this long fails ("Command timed out"): a Redis that stopped answering. */
  commandMs: number;
}

/** A Sentinel group: where to ask, and the name of the master it watches. */
interface RedisSentinelConfig {
  sentinels: { host: string; port: number }[];
  name: string;
  /** The Sentinels' own password (REDIS_SENTINEL_PASSWORD); the data nodes' is `RedisConfig.password`. */
  password: string | null;
  /** The database number on the master (the `/db` of a `redis+sentinel://` URL). */
  db: number;
}

/** Where Redis is and how to sign in: read from the environment by `redisConfig`, used by `redisConnectionOptions`. */
export interface RedisConfig {
  /** One server (REDIS_URL, read by ioredis itself: credentials, `/db`, `rediss:` for TLS); null with Sentinel. */
  url: string | null;
  sentinel: RedisSentinelConfig | null;
  /** The data nodes' ACL user and password: from a `redis+sentinel://` URL or REDIS_PASSWORD (a REDIS_URL's own win). */
  username: string | null;
  password: string | null;
  timeouts: RedisTimeouts;
}

type Env = Record<string, string | undefined>;

const SENTINEL_SCHEME = 'redis+sentinel://';

/**
 * Reads REDIS_URL, REDIS_PASSWORD, REDIS_SENTINELS, REDIS_SENTINEL_NAME, REDIS_SENTINEL_PASSWORD.
 * Sentinel is configured by REDIS_SENTINELS (`host:port,…`) with REDIS_SENTINEL_NAME, or by a
 * `redis+sentinel://[[user]:password@]host:port[,host:port…]/name[/db]` REDIS_URL. A Sentinel
 * setting that would be ignored is refused: it once was silently, and every key went to REDIS_URL.
 * Throws an Error naming the variable (config.ts turns it into a ConfigError).
 */
export function redisConfig(env: Env, timeouts: RedisTimeouts): RedisConfig {
  const url = env.REDIS_URL || null;
  const sentinels = (env.REDIS_SENTINELS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const sentinelPassword = env.REDIS_SENTINEL_PASSWORD || null;
  const password = env.REDIS_PASSWORD || null;
  if (url?.startsWith(SENTINEL_SCHEME)) {
    if (sentinels.length) throw new Error('Set REDIS_SENTINELS or a redis+sentinel:// REDIS_URL, not both');
    const parsed = parseSentinelUrl(url, env.REDIS_SENTINEL_NAME || null);
    return {
      url: null,
      sentinel: { sentinels: parsed.sentinels, name: parsed.name, password: sentinelPassword, db: parsed.db },
      username: parsed.username,
      password: parsed.password ?? password,
      timeouts,
    };
  }
  if (sentinels.length) {
    if (url) throw new Error('Set REDIS_URL (one server) or REDIS_SENTINELS (a Sentinel group), not both');
    const name = env.REDIS_SENTINEL_NAME;
    if (!name) throw new Error('REDIS_SENTINELS needs REDIS_SENTINEL_NAME, the name of the master the Sentinels watch');
    return { url: null, sentinel: { sentinels: sentinels.map((s) => sentinelAddress(s, 'REDIS_SENTINELS')), name, password: sentinelPassword, db: 0 }, username: null, password, timeouts };
  }
  for (const name of ['REDIS_SENTINEL_NAME', 'REDIS_SENTINEL_PASSWORD'] as const) {
    if (env[name]) throw new Error(`${name} is set but no Sentinel is: set REDIS_SENTINELS, or a redis+sentinel:// REDIS_URL`);
  }
  return { url: url ?? 'redis://127.0.0.1:6379', sentinel: null, username: null, password, timeouts };
}

function parseSentinelUrl(url: string, nameFromEnv: string | null) {
  const rest = url.slice(SENTINEL_SCHEME.length);
  if (rest.includes('?') || rest.includes('#')) throw new Error('REDIS_URL: a redis+sentinel:// URL takes no query or fragment');
  const slash = rest.indexOf('/');
  const authority = slash === -1 ? rest : rest.slice(0, slash);
  const [name, db, ...extra] = slash === -1 ? [] : rest.slice(slash + 1).split('/');
  const at = authority.lastIndexOf('@');
  const userinfo = at === -1 ? null : authority.slice(0, at);
  const hosts = authority.slice(at + 1).split(',').filter(Boolean);
  if (!hosts.length) throw new Error('REDIS_URL: a redis+sentinel:// URL names at least one Sentinel (host:port)');
  const masterName = decodeURIComponent(name || '') || nameFromEnv;
  if (!masterName) throw new Error('REDIS_URL: a redis+sentinel:// URL ends with the master name (…/mymaster), or set REDIS_SENTINEL_NAME');
  if (name && nameFromEnv && nameFromEnv !== masterName) throw new Error(`REDIS_URL names the master "${masterName}" and REDIS_SENTINEL_NAME "${nameFromEnv}"`);
  if (extra.length || (db !== undefined && db !== '' && !/^\d+$/.test(db))) throw new Error('REDIS_URL: a redis+sentinel:// URL ends with /name or /name/<database number>');
  const colon = userinfo?.indexOf(':') ?? -1;
  return {
    sentinels: hosts.map((h) => sentinelAddress(h, 'REDIS_URL')),
    name: masterName,
    db: db ? Number(db) : 0,
    username: userinfo && colon > 0 ? decodeURIComponent(userinfo.slice(0, colon)) : null,
    password: userinfo ? decodeURIComponent(colon === -1 ? userinfo : userinfo.slice(colon + 1)) || null : null,
  };
}

/** `host:port`, `host` (Sentinel's port 26379) or `[ipv6]:port`. */
function sentinelAddress(raw: string, variable: string): { host: string; port: number } {
  const match = /^\[([^\]]+)\](?::(\d+))?$/.exec(raw) ?? /^([^:[\]]+)(?::(\d+))?$/.exec(raw);
  const port = Number(match?.[2] ?? 26379);
  if (!match || !Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`${variable}: "${raw}" is not a Sentinel address (host:port)`);
  return { host: match[1]!, port };
}

/** REDIS_URL with its password masked, or the Sentinels and the master name: for logs and /ops/system. */
export function describeRedis(redis: RedisConfig): string {
  if (redis.sentinel) {
    const { sentinels, name, db } = redis.sentinel;
    const hosts = sentinels.map(({ host, port }) => `${host.includes(':') ? `[${host}]` : host}:${port}`).join(',');
    return `${SENTINEL_SCHEME}${hosts}/${encodeURIComponent(name)}${db ? `/${db}` : ''}`;
  }
  return redactUrl(redis.url!);
}

/**
 * ioredis' Sentinel connector, mended. Its failover detector (connections to the Sentinels,
 * subscribed to +switch-master) is only dropped when the client disconnects itself, so it
 * outlives a connection the server closed:
 * - a primary killed: when the switch is announced while the client is reconnecting, the stale
 *   detector aborts that attempt for good; the client ends (status `end`) and never reconnects, so
 *   an instance would answer 503 until restarted (measured: 10 clients of 10 ended);
 * - QUIT (BullMQ closing its connections, a shutdown): its Sentinel connections stay open and
 *   retry every minute, keeping the process alive.
 * So the detector goes with the connection it watches. The live connection's detector still does
 * its job: a frozen primary keeps its sockets open, and +switch-master is what drops them.
 */
class SentinelConnectorMended extends SentinelConnector {
  constructor(options: unknown) {
    super(options as ConstructorParameters<typeof SentinelConnector>[0]); // ioredis passes the client's options
  }

  override async connect(...args: Parameters<SentinelConnector['connect']>): ReturnType<SentinelConnector['connect']> {
    const stream = await super.connect(...args);
    // Made when the stream connects (before any 'close'), so this finds it.
    stream.once('close', () => {
      const self = this as unknown as { failoverDetector: { cleanup(): void } | null };
      self.failoverDetector?.cleanup();
      self.failoverDetector = null;
    });
    return stream;
  }
}

/** ioredis options, plus the `url` ioredis parses itself (BullMQ's connection options take it too). */
export type RedisConnectionOptions = Omit<RedisOptions, 'retryStrategy'> & { url?: string; retryStrategy: (attempt: number) => number };

/**
 * The one place Redis connections are described: where Redis is (one server, or the master a
 * Sentinel group names) and how a connection finds it again. Callers add what their use needs
 * (`failFast` for requests and the producer; BullMQ wants `maxRetriesPerRequest: null`). `url` is
 * for ioredis' own URL parsing: `openRedis` and BullMQ's connection options both take it.
 */
export function redisConnectionOptions(redis: RedisConfig): RedisConnectionOptions {
  const common: RedisConnectionOptions = {
    ...(redis.url ? { url: redis.url } : {}),
    ...(redis.username ? { username: redis.username } : {}),
    ...(redis.password ? { password: redis.password } : {}),
    connectTimeout: redis.timeouts.connectMs,
    // Dropping a connection waits for the server's goodbye this long (ioredis: 2 s), then cuts it: a
    // frozen primary never says it, and the reconnection to the new master waits for this.
    disconnectTimeout: redis.timeouts.commandMs,
    // Reconnect soon: with Sentinel the next attempt asks for the master again, and a failover is
    // over as soon as one attempt reaches the promoted replica.
    retryStrategy: (attempt: number) => Math.min(attempt * 200, 1_000),
    // A primary demoted to replica while a connection stayed open answers writes with READONLY:
    // reconnect (with Sentinel, to the new master). The command fails (503 for a request) rather
    // than being sent again: a command of a MULTI would run alone, and a server that stays a
    // replica (one REDIS_URL) would be asked again forever.
    reconnectOnError: (err: Error) => /^READONLY /.test(err.message),
  };
  if (!redis.sentinel) return common;
  const { sentinels, name, password, db } = redis.sentinel;
  return {
    ...common,
    sentinels,
    name,
    db,
    ...(password ? { sentinelPassword: password } : {}),
    // A frozen Sentinel must not stall the search for the master: each question is bounded.
    sentinelCommandTimeout: redis.timeouts.commandMs,
    // All Sentinels unreachable: ask again soon rather than back off for long.
    sentinelRetryStrategy: (attempt: number) => Math.min(attempt * 200, 1_000),
    // Listen for +switch-master and drop the connection at once: a master that froze (or was cut
    // off) keeps its sockets open, so without this a connection would wait on it after the switch.
    failoverDetector: true,
    Connector: SentinelConnectorMended,
  };
}

/** Fail fast: what a request (or the job producer, after a request's commit) may wait on Redis. */
export function failFast(timeouts: RedisTimeouts): RedisOptions {
  return {
    // No offline queue and one try per command: while Redis is down (or a failover is under way)
    // a command fails at once instead of waiting for a reconnection, and the request answers 503.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: timeouts.commandMs,
  };
}

/** A connection to the configured Redis with `overrides` on top (the callers' own needs). */
export function openRedis(redis: RedisConfig, overrides: RedisOptions = {}): RedisClient {
  const { url, ...options } = { ...redisConnectionOptions(redis), ...overrides };
  return url ? new Redis(url, options) : new Redis(options);
}

/**
 * The connection requests use (rate limits, probes). Its 'error' and 'ready' events are reported
 * to the dependency monitor by the composition (app-context-factory.ts), not logged here.
 */
export function createRedis(redis: RedisConfig): RedisClient {
  const client = openRedis(redis, { ...failFast(redis.timeouts), lazyConnect: true });
  client.on('error', () => undefined); // without a listener ioredis prints every reconnect failure
  client.connect().catch(() => undefined); // retryStrategy keeps trying
  return client;
}

export async function pingRedis(redis: RedisClient): Promise<number> {
  const start = performance.now();
  await redis.ping();
  return performance.now() - start;
}

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'invalid url';
  }
}

/** A Lua script, sent by its SHA1 once Redis knows it. */
export interface RedisScript {
  text: string;
  sha: string;
}

export function redisScript(text: string): RedisScript {
  return { text, sha: createHash('sha1').update(text).digest('hex') };
}

/**
 * EVALSHA, and EVAL when this Redis does not know the script yet (first use, a restart, a new
 * master after a failover): one command per call, however many keys the script touches.
 */
export async function runScript(redis: RedisClient, script: RedisScript, keys: string[], args: (string | number)[]): Promise<unknown> {
  try {
    return await redis.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
    return redis.eval(script.text, keys.length, ...keys, ...args);
  }
}
