// The runtime settings (DESIGN 4), defined in code: key, type, rules, description, and the
// environment variable that gives the default at start. An operator's override
// (PUT /ops/settings/{key}) wins over that default on every instance until it is reset.
import { formatDuration, parseDuration } from './duration';

export type SettingType = 'boolean' | 'integer' | 'string' | 'duration' | 'enum';
export type SettingValue = boolean | number | string;

interface Definition<T extends SettingValue> {
  type: SettingType;
  description: string;
  /** The code default, used when the environment variable is unset. */
  fallback: T;
  /** The environment variable that gives the default, or null. */
  env: string | null;
  /** Why `value` (already of the right JSON type) is refused, or null when it is acceptable. */
  problem(value: T): string | null;
  /** The value of the environment variable, or why it is not acceptable. */
  fromEnv(raw: string): { value: T } | { error: string };
  /** The setting's canonical form of an acceptable value (durations as `336h0m0s`). */
  canonical(value: T): T;
  allowed: string[] | null;
}

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;

function boolean(o: { fallback: boolean; env?: string; description: string }): Definition<boolean> {
  return {
    type: 'boolean',
    description: o.description,
    fallback: o.fallback,
    env: o.env ?? null,
    allowed: null,
    problem: () => null,
    fromEnv: (raw) => (raw === 'true' || raw === 'false' ? { value: raw === 'true' } : { error: 'must be true or false' }),
    canonical: (v) => v,
  };
}

function integer(o: { fallback: number; min: number; max: number; env?: string; description: string }): Definition<number> {
  const problem = (v: number) => (Number.isInteger(v) && v >= o.min && v <= o.max ? null : `must be an integer from ${o.min} to ${o.max}`);
  return {
    type: 'integer',
    description: `${o.description} (${o.min} to ${o.max}).`,
    fallback: o.fallback,
    env: o.env ?? null,
    allowed: null,
    problem,
    fromEnv: (raw) => {
      const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
      const error = problem(n);
      return error ? { error } : { value: n };
    },
    canonical: (v) => v,
  };
}

/**
 * A duration: Go-style text (`336h`, `1h30m`, `90s`), shown canonical (`336h0m0s`). `envSeconds`:
 * the environment variable holds whole seconds (the form SESSION_IDLE_TIMEOUT_SECONDS always had).
 */
function duration(o: { fallbackMs: number; minMs: number; maxMs: number; env?: string; envSeconds?: boolean; description: string }): Definition<string> {
  const bounds = `${formatDuration(o.minMs)} to ${formatDuration(o.maxMs)}`;
  const problem = (v: string) => {
    const ms = parseDuration(v);
    if (ms === null) return 'must be a duration such as 336h, 1h30m or 90s';
    return ms >= o.minMs && ms <= o.maxMs ? null : `must be a duration from ${bounds}`;
  };
  return {
    type: 'duration',
    description: `${o.description} (${bounds}).`,
    fallback: formatDuration(o.fallbackMs),
    env: o.env ?? null,
    allowed: null,
    problem,
    fromEnv: (raw) => {
      const text = o.envSeconds ? (/^\d+$/.test(raw) ? `${raw}s` : 'x') : raw;
      const error = problem(text);
      return error ? { error: o.envSeconds ? `must be whole seconds from ${o.minMs / 1000} to ${o.maxMs / 1000}` : error } : { value: formatDuration(parseDuration(text)!) };
    },
    canonical: (v) => formatDuration(parseDuration(v)!),
  };
}

const rateLimit = (env: string, fallback: number, what: string, min = 1) =>
  integer({ env, fallback, min, max: 1_000_000_000, description: what });

const retention = (days: number, what: string) =>
  duration({ fallbackMs: days * DAY_MS, minMs: HOUR_MS, maxMs: 3650 * DAY_MS, description: what });

/** Every runtime setting, by key (sorted by key when listed). */
const SETTINGS = {
  'auth.registration_enabled': boolean({ fallback: true, env: 'AUTH_REGISTRATION_ENABLED', description: 'Whether new accounts may register; when off, POST /v1/auth/register answers 403 registration_closed.' }),
  'auth.password_min_length': integer({ fallback: 8, min: 8, max: 128, env: 'AUTH_PASSWORD_MIN_LENGTH', description: 'Minimum length of new passwords' }),
  'auth.session_idle_timeout': duration({
    fallbackMs: 14 * DAY_MS,
    minMs: HOUR_MS,
    maxMs: 90 * DAY_MS,
    env: 'SESSION_IDLE_TIMEOUT_SECONDS',
    envSeconds: true,
    description: 'Sessions unused for this long end; applies at once to every session',
  }),
  maintenance_mode: boolean({ fallback: false, env: 'MAINTENANCE_MODE', description: 'When on, /v1 writes answer 503 unavailable; reads and /ops keep working.' }),
  'rate_limit.login_per_minute': rateLimit('RATE_LIMIT_LOGIN_PER_MINUTE', 10, 'Sign-in attempts per minute, per client IP and per email'),
  'rate_limit.register_per_minute': rateLimit('RATE_LIMIT_REGISTER_PER_MINUTE', 5, 'Registrations per minute per client IP'),
  'rate_limit.email_per_15_minutes': rateLimit('RATE_LIMIT_EMAIL_PER_15_MINUTES', 3, 'Password-reset and verification emails per 15 minutes per address'),
  'rate_limit.ip_per_minute': rateLimit('RATE_LIMIT_IP_PER_MINUTE', 600, 'Requests per minute per client IP, for every operation; 0 turns this ceiling off', 0),
  'rate_limit.step_up_per_15_minutes': rateLimit('RATE_LIMIT_STEP_UP_PER_15_MINUTES', 5, 'Wrong fresh proofs (password, code, passkey) per user per 15 minutes'),
  'rate_limit.code_failures_per_day': rateLimit('RATE_LIMIT_CODE_FAILURES_PER_DAY', 10, 'Wrong verification or reset codes per account per day'),
  'rate_limit.recovery_codes_per_hour': rateLimit('RATE_LIMIT_RECOVERY_CODES_PER_HOUR', 3, 'Recovery-code regenerations per user per hour'),
  'retention.audit_events': retention(365, 'How long audit events are kept'),
  'retention.job_runs': retention(30, 'How long finished (completed, cancelled, discarded) job runs are kept'),
  'retention.expired_sessions': retention(7, 'How long sessions are kept after they expired or were revoked'),
  'retention.expired_codes': retention(1, 'How long one-time codes, sign-in challenges and passkey ceremonies are kept after they were used or expired'),
  'retention.deleted_organisations': retention(30, 'How long soft-deleted organisations can be restored before they are purged'),
  'retention.instances': retention(90, 'How long records of stopped or silent instances are kept'),
  'retention.sent_mail': retention(30, 'How long records of sent email are kept'),
  // Short by design: a retry comes within minutes, and each row holds an answer. Not `retention()`:
  // its ten-year bound would let the table hold every write's answer for years.
  'retention.idempotency_keys': duration({
    fallbackMs: DAY_MS,
    minMs: HOUR_MS,
    maxMs: 30 * DAY_MS,
    description: 'How long a request with an Idempotency-Key is remembered, so a retry with that key replays its answer; a change applies to keys recorded afterwards',
  }),
} satisfies Record<string, Definition<boolean> | Definition<number> | Definition<string>>;

export type SettingKey = keyof typeof SETTINGS;
/** The JSON type of a setting's value: `SettingOf<'maintenance_mode'>` is boolean. */
export type SettingOf<K extends SettingKey> = (typeof SETTINGS)[K]['fallback'];

export const SETTING_KEYS = (Object.keys(SETTINGS) as SettingKey[]).sort();

export function isSettingKey(key: string): key is SettingKey {
  return Object.prototype.hasOwnProperty.call(SETTINGS, key);
}

export function definitionOf(key: SettingKey): Definition<SettingValue> {
  return SETTINGS[key] as Definition<SettingValue>;
}

const JSON_TYPE: Record<SettingType, 'boolean' | 'number' | 'string'> = { boolean: 'boolean', integer: 'number', string: 'string', duration: 'string', enum: 'string' };

/** The canonical value, or why `value` is not acceptable for `key` (no coercion: "12" is no integer). */
export function checkValue(key: SettingKey, value: unknown): { value: SettingValue } | { error: string } {
  const def = definitionOf(key);
  if (typeof value !== JSON_TYPE[def.type]) return { error: `must be ${def.type === 'integer' ? 'an integer' : `a ${JSON_TYPE[def.type]}`}` };
  const error = def.problem(value as SettingValue);
  return error ? { error } : { value: def.canonical(value as SettingValue) };
}

/** A duration setting in milliseconds. */
export function durationMs(text: string): number {
  return parseDuration(text)!;
}

/**
 * The defaults in force at start: each setting's environment variable when set, else its code
 * default. A variable that does not satisfy the setting's rules stops the start (`errors`).
 */
export function defaultsFromEnvironment(env: Record<string, string | undefined>): {
  defaults: Record<SettingKey, SettingValue>;
  fromEnvironment: Set<SettingKey>;
  errors: string[];
} {
  const defaults = {} as Record<SettingKey, SettingValue>;
  const fromEnvironment = new Set<SettingKey>();
  const errors: string[] = [];
  for (const key of SETTING_KEYS) {
    const def = definitionOf(key);
    const raw = def.env ? env[def.env] : undefined;
    defaults[key] = def.fallback;
    if (raw === undefined || raw === '') continue;
    const parsed = def.fromEnv(raw.trim());
    if ('error' in parsed) errors.push(`${def.env} ${parsed.error}, got "${raw}"`);
    else {
      defaults[key] = parsed.value;
      fromEnvironment.add(key);
    }
  }
  return { defaults, fromEnvironment, errors };
}
