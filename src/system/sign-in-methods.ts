// GET /ops/auth/providers: each sign-in method, whether it is switched on and configured, and
// the names of the variables it still needs (never their values).
import type { Config } from '../config';
import { PROVIDER_VARIABLES, type KnownVariable, type Provider } from '../config/social-providers';

export interface SignInMethod {
  method: 'password' | 'passkey' | 'totp' | Provider;
  usedFor: ('sign_in' | 'second_factor')[];
  enabled: boolean;
  configured: boolean;
  available: boolean;
  missing: string[];
}

function builtIn(method: SignInMethod['method'], usedFor: SignInMethod['usedFor'], missing: string[]): SignInMethod {
  return { method, usedFor, enabled: true, configured: missing.length === 0, available: missing.length === 0, missing };
}

function provider(method: Provider, set: Set<KnownVariable>): SignInMethod {
  const names = PROVIDER_VARIABLES[method];
  const missing = names.filter((name) => !set.has(name));
  return {
    method,
    usedFor: ['sign_in'],
    enabled: missing.length < names.length,
    configured: missing.length === 0,
    available: missing.length === 0,
    missing,
  };
}

/** Every method, in the contract's order. */
export function describeSignInMethods(config: Pick<Config, 'env' | 'variablesSet'>): SignInMethod[] {
  const set = config.variablesSet;
  return [
    builtIn('password', ['sign_in'], []),
    // The relying party's id and origins always resolve (config checks them at start).
    builtIn('passkey', ['sign_in', 'second_factor'], []),
    // Outside production a key is derived from SESSION_SECRET; production refuses to start without one.
    builtIn('totp', ['second_factor'], config.env === 'production' && !set.has('MFA_ENCRYPTION_KEY') ? ['MFA_ENCRYPTION_KEY'] : []),
    provider('provider_a', set),
    provider('provider_b', set),
  ];
}
