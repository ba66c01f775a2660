// Which configuration variables are set, by name only, for what src/config.ts does not otherwise
// say: the social providers' settings (read in full once sign-in through providers exists) and
// whether the secrets that have a development fallback were given. loadConfig calls setVariables
// once; values never leave this file.

type Env = Record<string, string | undefined>;

/** Every variable each social provider needs, in the order operators are told about them. */
export const PROVIDER_VARIABLES = {
  provider_a: ['PROVIDER_A_ISSUER', 'PROVIDER_A_CLIENT_ID', 'PROVIDER_A_CLIENT_SECRET'],
  provider_b: ['PROVIDER_B_ISSUER', 'PROVIDER_B_CLIENT_ID', 'PROVIDER_B_TEAM_ID', 'PROVIDER_B_KEY_ID', 'PROVIDER_B_PRIVATE_KEY'],
} as const;

export type Provider = keyof typeof PROVIDER_VARIABLES;

/** Secrets src/config.ts replaces with a derived or development value when they are unset. */
const SECRETS_WITH_FALLBACK = ['SESSION_SECRET', 'MFA_ENCRYPTION_KEY'] as const;

export type KnownVariable = (typeof PROVIDER_VARIABLES)[Provider][number] | (typeof SECRETS_WITH_FALLBACK)[number];

/** The names among the known variables that `env` sets to something other than blanks. */
export function setVariables(env: Env): Set<KnownVariable> {
  const known: KnownVariable[] = [...PROVIDER_VARIABLES.provider_a, ...PROVIDER_VARIABLES.provider_b, ...SECRETS_WITH_FALLBACK];
  return new Set(known.filter((name) => (env[name] ?? '').trim() !== ''));
}
