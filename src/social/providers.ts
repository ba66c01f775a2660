// The configured social providers as long-lived clients (one per process, on AppContext):
// discovery documents and signing keys are fetched once and cached. Keys are refreshed when a token
// names a key id we do not have (a provider rotated its keys), at most once per cooldown; discovery
// is redone daily. Every call to a provider is bounded by PROVIDER_TIMEOUT_MS, and a provider that
// cannot be reached is 503 `provider_unavailable`, never a hang or a 401.
import * as oidc from 'openid-client';
import { createRemoteJWKSet, errors as joseErrors, type JWSHeaderParameters, type FlattenedJWSInput } from 'jose';
import type { Logger } from '../logger';
import type { SocialConfig, Provider, ProviderSettings } from '../config/social-providers';
import { insecureIssuerAllowed } from '../config/social-providers';
import { ClientSecretCache, es256ClientSecret } from './client-secret';
import { providerUnavailable, socialErrors } from './errors';

const DISCOVERY_TTL_MS = 24 * 3600 * 1000;
/** Keys are refetched this often even when every token names a known key (removed keys go). */
const KEYS_MAX_AGE_MS = 3600 * 1000;

type KeyGetter = (header: JWSHeaderParameters, token: FlattenedJWSInput) => ReturnType<ReturnType<typeof createRemoteJWKSet>>;

/** A provider's discovered endpoints and keys, as one cache entry. */
export interface ProviderClient {
  settings: ProviderSettings;
  /** openid-client's configuration: endpoints, our web client, its authentication. */
  oidc: oidc.Configuration;
  /** Signature algorithms the provider signs ID tokens with (never `none` or HMAC). */
  algorithms: string[];
  /** The provider's signing keys; a key id we lack triggers one refetch (after the cooldown). */
  keys: KeyGetter;
}

/** A provider call that failed for a reason of the network or the provider, not of the token. */
export class ProviderUnreachable extends Error {}

export class SocialProviders {
  private readonly cache = new Map<Provider, { client: Promise<ProviderClient>; at: number }>();

  constructor(
    private readonly config: SocialConfig,
    private readonly logger: Logger,
  ) {}

  /** The provider's settings; 404 `provider_not_configured` when a variable is missing (this service does not offer it). */
  settings(provider: Provider): ProviderSettings {
    const settings = this.config.providers[provider];
    if (!settings) throw socialErrors.providerNotConfigured(`Sign-in with ${provider} is not configured on this service.`);
    return settings;
  }

  get clockSkewSeconds(): number {
    return this.config.clockSkewSeconds;
  }

  /** The discovered client; 503 `provider_unavailable` when discovery fails (tried again on the next call). */
  async client(provider: Provider): Promise<ProviderClient> {
    const settings = this.settings(provider);
    const cached = this.cache.get(provider);
    if (cached && Date.now() - cached.at < DISCOVERY_TTL_MS) return cached.client;
    const entry = { client: this.discover(settings), at: Date.now() };
    this.cache.set(provider, entry);
    try {
      return await entry.client;
    } catch (err) {
      if (this.cache.get(provider) === entry) this.cache.delete(provider);
      this.logger.warn('social provider discovery failed', { provider, issuer: settings.issuer, error: String(err) });
      throw providerUnavailable();
    }
  }

  private async discover(settings: ProviderSettings): Promise<ProviderClient> {
    const timeout = this.config.timeoutMs / 1000;
    const insecure = insecureIssuerAllowed(settings.issuer);
    const configuration = await oidc.discovery(new URL(settings.issuer), settings.clientIds[0]!, undefined, this.clientAuth(settings), {
      timeout,
      execute: insecure ? [oidc.allowInsecureRequests] : [],
    });
    configuration.timeout = timeout;
    const metadata = configuration.serverMetadata();
    if (!metadata.jwks_uri) throw new Error(`${settings.issuer} publishes no jwks_uri`);
    const remote = createRemoteJWKSet(new URL(metadata.jwks_uri), {
      timeoutDuration: this.config.timeoutMs,
      cooldownDuration: this.config.keysRefreshCooldownMs,
      cacheMaxAge: KEYS_MAX_AGE_MS,
    });
    const keys: KeyGetter = async (header, token) => {
      try {
        return await remote(header, token);
      } catch (err) {
        // An unknown key id is the token's fault (401); anything else is the provider's (503).
        if (err instanceof joseErrors.JWKSNoMatchingKey || err instanceof joseErrors.JWKSMultipleMatchingKeys) throw err;
        throw new ProviderUnreachable(`${settings.provider} keys: ${String(err)}`);
      }
    };
    const advertised = metadata.id_token_signing_alg_values_supported ?? ['RS256'];
    const algorithms = advertised.filter((alg) => alg !== 'none' && !alg.startsWith('HS'));
    return { settings, oidc: configuration, algorithms, keys };
  }

  /** provider_a: client_secret_post with the shared secret; provider_b: an ES256 JWT as the secret. */
  private clientAuth(settings: ProviderSettings): oidc.ClientAuth {
    if (settings.signingKey) {
      const { teamId, keyId, key } = settings.signingKey;
      const secrets = new ClientSecretCache((now) => es256ClientSecret({ teamId, keyId, key, clientId: settings.clientIds[0]!, audience: settings.issuer }, now));
      return (_as, client, body) => {
        body.set('client_id', client.client_id);
        body.set('client_secret', secrets.get());
      };
    }
    return oidc.ClientSecretPost(settings.clientSecret!);
  }
}
