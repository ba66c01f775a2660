// The social providers' configuration (DESIGN 2), read once by loadConfig: issuer (found by
// discovery), client id(s), and a client secret (provider_a) or the team's signing key that makes
// provider_b's ES256 client secret. A provider with any variable missing is not configured: its
// operations answer 404 `provider_not_configured` and /ops/auth/providers names what is missing.
// Also which of the secrets with a development fallback were given (names only, never values).
import { createPrivateKey, type KeyObject } from 'node:crypto';

type Env = Record<string, string | undefined>;

/** Every variable each social provider needs, in the order operators are told about them. */
export const PROVIDER_VARIABLES = {
  provider_a: ['PROVIDER_A_ISSUER', 'PROVIDER_A_CLIENT_ID', 'PROVIDER_A_CLIENT_SECRET'],
  provider_b: ['PROVIDER_B_ISSUER', 'PROVIDER_B_CLIENT_ID', 'PROVIDER_B_TEAM_ID', 'PROVIDER_B_KEY_ID', 'PROVIDER_B_PRIVATE_KEY'],
} as const;

export type Provider = keyof typeof PROVIDER_VARIABLES;

/** Secrets the config (index.ts) replaces with a derived or development value when they are unset. */
const SECRETS_WITH_FALLBACK = ['SESSION_SECRET', 'MFA_ENCRYPTION_KEY'] as const;

export type KnownVariable = (typeof PROVIDER_VARIABLES)[Provider][number] | (typeof SECRETS_WITH_FALLBACK)[number];

export interface ProviderSettings {
  provider: Provider;
  issuer: string;
  /** Every audience an ID token may name; the first is the web client the browser flow uses. */
  clientIds: string[];
  /** provider_a: the web client's secret (client_secret_post). */
  clientSecret: string | null;
  /** provider_b: the client secret is an ES256 JWT signed with this key (iss = team id, kid = key id). */
  signingKey: { teamId: string; keyId: string; key: KeyObject } | null;
  scope: string;
  /** The ID token's `nonce` claim is the SHA-256 (lower-case hex) of the nonce we issued, not the nonce. */
  nonceHashed: boolean;
}

export interface SocialConfig {
  providers: Partial<Record<Provider, ProviderSettings>>;
  /** How far `iat` may be in the future and `exp` in the past (PROVIDER_CLOCK_SKEW_SECONDS). */
  clockSkewSeconds: number;
  /** How long a call to a provider (discovery, keys, code exchange) may take. */
  timeoutMs: number;
  /**
   * A token signed by a key we do not know makes us fetch the provider's keys again, at most
   * once per this many ms (PROVIDER_KEYS_REFRESH_COOLDOWN_MS): forged tokens cannot make us
   * hammer the provider.
   */
  keysRefreshCooldownMs: number;
}

/** The names among the known variables that `env` sets to something other than blanks. */
export function setVariables(env: Env): Set<KnownVariable> {
  const known: KnownVariable[] = [...PROVIDER_VARIABLES.provider_a, ...PROVIDER_VARIABLES.provider_b, ...SECRETS_WITH_FALLBACK];
  return new Set(known.filter((name) => (env[name] ?? '').trim() !== ''));
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** Plain http only for an issuer on this machine (a development or test provider). */
export function insecureIssuerAllowed(issuer: string): boolean {
  const url = new URL(issuer);
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}

function issuerUrl(name: string, raw: string, problems: string[]): string {
  try {
    const url = new URL(raw);
    if (url.protocol === 'https:' || insecureIssuerAllowed(raw)) return raw.replace(/\/+$/, '');
    problems.push(`${name} must be an https URL (plain http only on 127.0.0.1 or localhost), got "${raw}"`);
  } catch {
    problems.push(`${name} must be a URL, got "${raw}"`);
  }
  return raw;
}

function ecKey(raw: string, problems: string[]): KeyObject | null {
  try {
    // A PEM pasted into one line of an env file keeps its line breaks as `\n`.
    const key = createPrivateKey(raw.includes('-----BEGIN') ? raw.replace(/\\n/g, '\n') : { key: Buffer.from(raw, 'base64'), format: 'der', type: 'pkcs8' });
    if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return key;
    problems.push('PROVIDER_B_PRIVATE_KEY must be a P-256 (ES256) private key');
  } catch {
    problems.push('PROVIDER_B_PRIVATE_KEY must be a PKCS#8 private key, as PEM or base64 DER');
  }
  return null;
}

function nonceMode(env: Env, name: string, fallback: 'raw' | 'sha256', problems: string[]): boolean {
  const raw = env[name] || fallback;
  if (raw !== 'raw' && raw !== 'sha256') problems.push(`${name} must be raw or sha256, got "${raw}"`);
  return raw === 'sha256';
}

function int(env: Env, name: string, fallback: number, problems: string[]): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) problems.push(`${name} must be a non-negative integer, got "${raw}"`);
  return n;
}

/**
 * The providers whose every variable is set (`set`: setVariables of the same env), plus the shared limits. `problems` collects values
 * that are set but wrong (loadConfig refuses to start with them).
 */
export function socialConfig(env: Env, set: Set<KnownVariable>, problems: string[]): SocialConfig {
  const value = (name: KnownVariable) => env[name]!.trim();
  const providers: SocialConfig['providers'] = {};
  if (PROVIDER_VARIABLES.provider_a.every((n) => set.has(n))) {
    providers.provider_a = {
      provider: 'provider_a',
      issuer: issuerUrl('PROVIDER_A_ISSUER', value('PROVIDER_A_ISSUER'), problems),
      clientIds: list(value('PROVIDER_A_CLIENT_ID')),
      clientSecret: value('PROVIDER_A_CLIENT_SECRET'),
      signingKey: null,
      scope: env.PROVIDER_A_SCOPE || 'openid email profile',
      nonceHashed: nonceMode(env, 'PROVIDER_A_NONCE', 'raw', problems),
    };
  }
  if (PROVIDER_VARIABLES.provider_b.every((n) => set.has(n))) {
    const key = ecKey(value('PROVIDER_B_PRIVATE_KEY'), problems);
    providers.provider_b = {
      provider: 'provider_b',
      issuer: issuerUrl('PROVIDER_B_ISSUER', value('PROVIDER_B_ISSUER'), problems),
      clientIds: list(value('PROVIDER_B_CLIENT_ID')),
      clientSecret: null,
      signingKey: key && { teamId: value('PROVIDER_B_TEAM_ID'), keyId: value('PROVIDER_B_KEY_ID'), key },
      scope: env.PROVIDER_B_SCOPE || 'openid email name',
      nonceHashed: nonceMode(env, 'PROVIDER_B_NONCE', 'sha256', problems),
    };
  }
  return {
    providers,
    clockSkewSeconds: int(env, 'PROVIDER_CLOCK_SKEW_SECONDS', 60, problems),
    timeoutMs: Math.max(1, int(env, 'PROVIDER_TIMEOUT_MS', 5_000, problems)),
    keysRefreshCooldownMs: int(env, 'PROVIDER_KEYS_REFRESH_COOLDOWN_MS', 30_000, problems),
  };
}

function list(raw: string): string[] {
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}
