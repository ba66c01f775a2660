// The one place that reads configuration. Everything else receives a Config.
import fs from 'node:fs';
import path from 'node:path';
import { redisConfig, type RedisConfig } from '../platform/redis';
import { deriveKey, HmacKeyRing } from '../platform/secret-keys';
import { defaultsFromEnvironment, type SettingKey, type SettingValue } from './settings-catalog';
import { setVariables, socialConfig, type KnownVariable, type SocialConfig } from './social-providers';

/** Project root (where openapi.yaml and package.json live), found from src/ and from dist/src/. */
export const projectRoot = (() => {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('package.json not found above ' + __dirname);
    dir = parent;
  }
  return dir;
})();

export interface Config {
  env: 'development' | 'production' | 'test';
  host: string;
  port: number;
  /** GET /metrics (Prometheus) on a listener of its own, on HOST; null (METRICS_PORT unset): off. */
  metricsPort: number | null;
  /** Public base URL of the API; https here switches the session cookie to `__Host-session`. */
  publicBaseUrl: string;
  /** Origins allowed to make cookie-authenticated unsafe requests (CSRF check). */
  appOrigins: string[];
  /** The app page that accepts invitations; the mailed link is this URL with `#token=…` (a fragment: never sent to a server, never in access logs). */
  invitationUrl: string;
  /** Empty: start an embedded PostgreSQL with its data under `dataDir`. */
  databaseUrl: string | null;
  /**
   * The role requests run as: subject to row-level security (not the tables' owner, not a
   * superuser, not BYPASSRLS). With DATABASE_APP_URL unset the service creates and maintains the
   * role `role` itself (a random password kept in the database: platform/database-roles.ts); set DATABASE_APP_URL when an
   * operator manages that role.
   */
  databaseApp: { url: string | null; role: string };
  databasePoolMax: number;
  /**
   * How long a request waits on PostgreSQL before it answers 503: `connectMs` for a connection
   * (opening one or waiting for a free one), `queryMs` for one statement (client side: also a
   * database that stopped answering), `statementMs` the server-side statement_timeout, shorter
   * than `queryMs` so a merely slow statement is cancelled by the server and its connection kept.
   */
  databaseTimeouts: { connectMs: number; queryMs: number; statementMs: number };
  /**
   * What sits between requests and PostgreSQL (DATABASE_POOLER): `session`, a direct connection or
   * a pooler that gives a client one server connection for its life; `transaction`, a pooler
   * (PgBouncer `pool_mode = transaction`) that may hand each transaction another one, so no
   * session state is kept: no named prepared statements, no statement_timeout startup parameter
   * (the role's default carries it, see database-roles.ts).
   */
  databasePooler: DatabasePooler;
  dataDir: string;
  embeddedPostgresPort: number;
  /**
   * Where Redis is (one server, or the master a Sentinel group names), its passwords, and how long
   * a request waits on it (to connect, for one command's answer). Connections are built from it by
   * `redisConnectionOptions` (platform/redis.ts), never from a bare URL.
   */
  redis: RedisConfig;
  /** Prefix for every Redis key, so several deployments (or test runs) can share one Redis. */
  redisPrefix: string;
  /**
   * Node's server limits: a client must send its headers within `headersTimeoutMs` and its whole
   * request within `requestTimeoutMs`; an idle keep-alive connection closes after `keepAliveTimeoutMs`.
   */
  http: { headersTimeoutMs: number; requestTimeoutMs: number; keepAliveTimeoutMs: number };
  /** Express `trust proxy`: which proxies may set X-Forwarded-For. */
  trustProxy: string | number | boolean;
  logLevel: string;
  /**
   * SESSION_SECRET (required, 32+ characters, in production), from which a key per purpose is
   * derived (src/platform/secret-keys.ts), and the older secrets SESSION_SECRET_PREVIOUS still
   * accepts while one is rotated out.
   */
  sessionSecret: string;
  keys: { oneTimeCodes: HmacKeyRing; recoveryCodes: HmacKeyRing };
  auth: { bcryptCost: number };
  /**
   * The defaults of the runtime settings (settings-catalog.ts: registration, password minimum,
   * session idle timeout, rate limits, maintenance mode, retention periods): each one's environment
   * variable when set, else the code default. Read them through `app.settings`, where an
   * operator's override wins.
   */
  settingDefaults: { values: Record<SettingKey, SettingValue>; fromEnvironment: Set<SettingKey> };
  session: { absoluteLifetimeSeconds: number };
  /**
   * Which of the social providers' variables and the secrets with a development fallback were
   * given (names only: /ops/system and /ops/auth/providers say set/unset, never a value).
   */
  variablesSet: Set<KnownVariable>;
  /** Social sign-in: the configured providers (complete ones only) and the limits of calls to them. */
  social: SocialConfig;
  /**
   * Second factors: `encryptionKey` (32 bytes, MFA_ENCRYPTION_KEY) encrypts authenticator-app
   * secrets at rest; `totpIssuer` is the name authenticator apps show.
   */
  mfa: { encryptionKey: Buffer; totpIssuer: string };
  /**
   * Passkeys: the relying-party id (a registrable domain every origin is on), the name browsers
   * show, and the origins a WebAuthn response may come from (default: APP_ORIGINS).
   */
  webauthn: { rpId: string; rpName: string; origins: string[] };
  operatorEmails: string[];
  /** `transport`: `smtp` needs SMTP_URL; `log` sends nothing (production only with MAIL_TRANSPORT=log). */
  mail: { smtpUrl: string | null; from: string; transport: 'smtp' | 'log' };
  /** Run job workers in this process (the API); `worker` mode runs them without HTTP. */
  runWorkers: boolean;
  /** Jobs each process runs at once per queue (JOB_CONCURRENCY_DEFAULT, _MAIL, _MAINTENANCE). */
  jobConcurrency: { default: number; mail: number; maintenance: number };
  /**
   * After SIGTERM: how long the API keeps serving, with /readyz at 503, so a load balancer notices
   * from its health checks and stops sending before the listener closes (SHUTDOWN_DELAY_MS).
   */
  shutdownDelayMs: number;
  /** Then the longest the drain (requests, jobs, pools) takes before the process exits. */
  shutdownTimeoutMs: number;
  build: { version: string; commit: string; builtAt: string | null };
}

export type DatabasePooler = 'session' | 'transaction';

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new ConfigError(`${name} must be a non-negative integer, got "${raw}"`);
  return n;
}

function positive(env: Env, name: string, fallback: number): number {
  const n = int(env, name, fallback);
  if (n < 1) throw new ConfigError(`${name} must be at least 1, got "${env[name]}"`);
  return n;
}

function list(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function mailTransport(env: Env): 'smtp' | 'log' {
  const raw = env.MAIL_TRANSPORT || (env.SMTP_URL ? 'smtp' : 'log');
  if (raw !== 'smtp' && raw !== 'log') throw new ConfigError(`MAIL_TRANSPORT must be smtp or log, got "${raw}"`);
  if (raw === 'smtp' && !env.SMTP_URL) throw new ConfigError('MAIL_TRANSPORT=smtp needs SMTP_URL');
  return raw;
}

function roleName(raw: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(raw)) throw new ConfigError(`DATABASE_APP_ROLE must be a lower-case PostgreSQL identifier, got "${raw}"`);
  return raw;
}

function databaseTimeouts(env: Env): Config['databaseTimeouts'] {
  const queryMs = positive(env, 'DATABASE_QUERY_TIMEOUT_MS', 1_000);
  const statementMs = positive(env, 'DATABASE_STATEMENT_TIMEOUT_MS', Math.max(1, queryMs - 100));
  if (statementMs >= queryMs) {
    throw new ConfigError(`DATABASE_STATEMENT_TIMEOUT_MS (${statementMs}) must be below DATABASE_QUERY_TIMEOUT_MS (${queryMs}): the server cancels a slow statement first and keeps the connection`);
  }
  return { connectMs: positive(env, 'DATABASE_CONNECT_TIMEOUT_MS', 1_000), queryMs, statementMs };
}

function databasePooler(raw: string | undefined): DatabasePooler {
  if (raw === undefined || raw === '' || raw === 'none' || raw === 'session') return 'session';
  if (raw === 'transaction') return 'transaction';
  throw new ConfigError(`DATABASE_POOLER must be session (or none: a direct connection) or transaction, got "${raw}"`);
}

function redis(env: Env): RedisConfig {
  const timeouts = { connectMs: positive(env, 'REDIS_CONNECT_TIMEOUT_MS', 1_000), commandMs: positive(env, 'REDIS_COMMAND_TIMEOUT_MS', 500) };
  try {
    return redisConfig(env, timeouts);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

function httpTimeouts(env: Env): Config['http'] {
  const headersTimeoutMs = positive(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000);
  const requestTimeoutMs = positive(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000);
  // Node refuses a headers timeout longer than the request timeout.
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(`HTTP_HEADERS_TIMEOUT_MS (${headersTimeoutMs}) must not exceed HTTP_REQUEST_TIMEOUT_MS (${requestTimeoutMs})`);
  }
  return { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs: positive(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 65_000) };
}

function social(env: Env, set: Set<KnownVariable>): SocialConfig {
  const problems: string[] = [];
  const result = socialConfig(env, set, problems);
  if (problems.length) throw new ConfigError(problems.join('; '));
  return result;
}

function settingDefaults(env: Env): Config['settingDefaults'] {
  const { defaults, fromEnvironment, errors } = defaultsFromEnvironment(env);
  if (errors.length) throw new ConfigError(errors.join('; '));
  return { values: defaults, fromEnvironment };
}

/**
 * MFA_ENCRYPTION_KEY: 32 bytes as base64 or hex. Unset outside production, a key is derived from
 * SESSION_SECRET so development needs no setup (production refuses to start without one).
 */
const DEVELOPMENT_SECRET = 'development-only-secret-do-not-use-in-production';

/** The key rings of SESSION_SECRET's purposes: signing with it, verifying with it and SESSION_SECRET_PREVIOUS. */
function sessionKeys(env: Env): Config['keys'] {
  const secrets = [env.SESSION_SECRET || DEVELOPMENT_SECRET, ...list(env.SESSION_SECRET_PREVIOUS)];
  return { oneTimeCodes: new HmacKeyRing(secrets, 'one-time-codes'), recoveryCodes: new HmacKeyRing(secrets, 'recovery-codes') };
}

function mfaEncryptionKey(env: Env): Buffer {
  const raw = env.MFA_ENCRYPTION_KEY?.trim();
  if (!raw) {
    return deriveKey(env.SESSION_SECRET || DEVELOPMENT_SECRET, 'mfa-encryption-key');
  }
  const key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (key.length !== 32) throw new ConfigError('MFA_ENCRYPTION_KEY must be 32 bytes, as base64 (44 characters) or hex (64 characters)');
  return key;
}

/**
 * WEBAUTHN_RP_ID (default: the host of the first origin), WEBAUTHN_RP_NAME, WEBAUTHN_ORIGINS
 * (default: the app origins). Browsers refuse a ceremony whose origin is not on the RP id's
 * domain, so that is checked here rather than discovered at the first sign-in.
 */
function webauthn(env: Env, appOrigins: string[]): Config['webauthn'] {
  const origins = list(env.WEBAUTHN_ORIGINS).length ? list(env.WEBAUTHN_ORIGINS) : appOrigins;
  const rpId = (env.WEBAUTHN_RP_ID || new URL(origins[0]!).hostname).toLowerCase();
  for (const origin of origins) {
    const host = new URL(origin).hostname;
    if (host !== rpId && !host.endsWith(`.${rpId}`)) {
      throw new ConfigError(`WEBAUTHN_RP_ID "${rpId}" must be the host of every WebAuthn origin or a parent domain of it; "${origin}" is not`);
    }
  }
  return { rpId, rpName: env.WEBAUTHN_RP_NAME || 'Tenant API', origins };
}

function trustProxy(raw: string | undefined): string | number | boolean {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  return raw; // e.g. "loopback, 10.0.0.0/8"
}

export function loadConfig(env: Env = process.env): Config {
  const mode = env.NODE_ENV === 'production' ? 'production' : env.NODE_ENV === 'test' ? 'test' : 'development';
  const port = int(env, 'PORT', 3000);
  const variablesSet = setVariables(env);
  const publicBaseUrl = (env.PUBLIC_BASE_URL ?? `http://localhost:${port}`).replace(/\/+$/, '');
  const config: Config = {
    env: mode,
    host: env.HOST ?? '0.0.0.0',
    port,
    metricsPort: env.METRICS_PORT ? int(env, 'METRICS_PORT', 0) : null,
    publicBaseUrl,
    appOrigins: list(env.APP_ORIGINS).length ? list(env.APP_ORIGINS) : [new URL(publicBaseUrl).origin],
    invitationUrl: env.INVITATION_URL || `${list(env.APP_ORIGINS)[0] ?? new URL(publicBaseUrl).origin}/invitations/accept`,
    databaseUrl: env.DATABASE_URL || null,
    databaseApp: { url: env.DATABASE_APP_URL || null, role: roleName(env.DATABASE_APP_ROLE || 'tenant_api_app') },
    databasePoolMax: int(env, 'DATABASE_POOL_MAX', 10),
    databaseTimeouts: databaseTimeouts(env),
    databasePooler: databasePooler(env.DATABASE_POOLER),
    dataDir: path.resolve(env.DATA_DIR ?? '.data'),
    embeddedPostgresPort: int(env, 'EMBEDDED_POSTGRES_PORT', 54329),
    redis: redis(env),
    redisPrefix: env.REDIS_PREFIX ?? 'tenant-api:',
    http: httpTimeouts(env),
    trustProxy: trustProxy(env.TRUST_PROXY),
    logLevel: env.LOG_LEVEL ?? (mode === 'test' ? 'silent' : 'info'),
    sessionSecret: env.SESSION_SECRET || DEVELOPMENT_SECRET,
    keys: sessionKeys(env),
    auth: { bcryptCost: int(env, 'BCRYPT_COST', 12) },
    settingDefaults: settingDefaults(env),
    variablesSet,
    social: social(env, variablesSet),
    session: {
      absoluteLifetimeSeconds: int(env, 'SESSION_ABSOLUTE_LIFETIME_SECONDS', 90 * 24 * 3600),
    },
    mfa: { encryptionKey: mfaEncryptionKey(env), totpIssuer: env.MFA_TOTP_ISSUER || 'Tenant API' },
    webauthn: webauthn(env, list(env.APP_ORIGINS).length ? list(env.APP_ORIGINS) : [new URL(publicBaseUrl).origin]),
    operatorEmails: list(env.OPERATOR_EMAILS).map((e) => e.toLowerCase()),
    mail: { smtpUrl: env.SMTP_URL || null, from: env.MAIL_FROM || 'Tenant API <no-reply@localhost>', transport: mailTransport(env) },
    runWorkers: env.RUN_WORKERS !== 'false',
    jobConcurrency: {
      // Handlers mostly wait on I/O, and the workers' row writes are batched: a high default.
      default: positive(env, 'JOB_CONCURRENCY_DEFAULT', 200),
      mail: positive(env, 'JOB_CONCURRENCY_MAIL', 5),
      maintenance: positive(env, 'JOB_CONCURRENCY_MAINTENANCE', 1),
    },
    shutdownDelayMs: int(env, 'SHUTDOWN_DELAY_MS', 5_000),
    shutdownTimeoutMs: int(env, 'SHUTDOWN_TIMEOUT_MS', 10_000),
    build: {
      version: env.BUILD_VERSION || readPackageVersion(),
      commit: env.BUILD_COMMIT || 'unknown',
      builtAt: env.BUILD_TIME || null,
    },
  };
  if (config.env === 'production') {
    const missing: string[] = [];
    if (!config.databaseUrl) missing.push('DATABASE_URL (production does not start an embedded PostgreSQL)');
    if (!env.SESSION_SECRET || env.SESSION_SECRET.length < 32) missing.push('SESSION_SECRET (at least 32 characters)');
    if (list(env.SESSION_SECRET_PREVIOUS).some((s) => s.length < 32)) missing.push('SESSION_SECRET_PREVIOUS (each secret at least 32 characters)');
    if (!env.PUBLIC_BASE_URL) missing.push('PUBLIC_BASE_URL');
    if (!env.MFA_ENCRYPTION_KEY) missing.push('MFA_ENCRYPTION_KEY (32 bytes, base64 or hex: `openssl rand -base64 32`)');
    if (missing.length) throw new ConfigError(`Missing required configuration in production: ${missing.join('; ')}`);
    // Trusting every hop lets any client forge X-Forwarded-For and dodge the per-IP limits.
    if (config.trustProxy === true) {
      throw new ConfigError('TRUST_PROXY=true trusts every hop, so a forged X-Forwarded-For defeats the per-IP limits: give the number of proxies (e.g. 1) or their addresses/subnets (e.g. "10.0.0.0/8")');
    }
    // The log transport sends nothing: in production only when asked for by name.
    if (config.mail.transport === 'log' && env.MAIL_TRANSPORT !== 'log') {
      throw new ConfigError('No SMTP_URL: production does not silently drop mail. Set SMTP_URL, or MAIL_TRANSPORT=log to send nothing on purpose');
    }
  }
  return config;
}

function readPackageVersion(): string {
  try {
    return (JSON.parse(fs.readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '0.0.0';
  }
}
