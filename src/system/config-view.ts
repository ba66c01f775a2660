// The configuration /ops/system shows: an explicit allow-list, so a setting added to Config stays
// out until someone decides it may be shown. Secrets appear only as `set`/`unset`; connection
// strings lose their credentials.
import type { Config } from '../config';
import type { MailDescription } from '../mail/mailer';
import { describeRedis } from '../platform/redis';
import { PROVIDER_VARIABLES } from '../config/social-providers';

export type ConfigValue = string | number | boolean | null;

/** Query parameters a connection string keeps: drivers also take credentials from the query (`?password=`). */
const SAFE_URL_PARAMETERS = ['sslmode', 'host'];

/** `url` without user, password, fragment or query parameters other than the safe ones. */
export function withoutCredentials(raw: string): string {
  try {
    const url = new URL(raw);
    url.username = '';
    url.password = '';
    url.hash = '';
    const kept = new URLSearchParams();
    for (const name of SAFE_URL_PARAMETERS) {
      const value = url.searchParams.get(name);
      if (value !== null) kept.set(name, value);
    }
    url.search = kept.toString();
    return url.toString();
  } catch {
    return 'invalid url';
  }
}

const presence = (set: boolean) => (set ? 'set' : 'unset');

/** Flat snake_case keys. */
export function configView(config: Config, mail: MailDescription): Record<string, ConfigValue> {
  const set = config.variablesSet;
  // Only whether they are set, never their values: secrets are among them.
  const providerVariables = Object.values(PROVIDER_VARIABLES)
    .flat()
    .map((name) => [name.toLowerCase(), presence(set.has(name))]);
  return {
    node_env: config.env,
    host: config.host,
    port: config.port,
    public_base_url: config.publicBaseUrl,
    app_origins: config.appOrigins.join(','),
    invitation_url: config.invitationUrl,
    trust_proxy: config.trustProxy,
    // null: the embedded PostgreSQL.
    database_url: config.databaseUrl && withoutCredentials(config.databaseUrl),
    database_app_url: config.databaseApp.url && withoutCredentials(config.databaseApp.url),
    database_app_role: config.databaseApp.role,
    database_pool_max: config.databasePoolMax,
    database_connect_timeout_ms: config.databaseTimeouts.connectMs,
    database_query_timeout_ms: config.databaseTimeouts.queryMs,
    database_statement_timeout_ms: config.databaseTimeouts.statementMs,
    // With Sentinel: redis+sentinel://<the sentinels>/<master name>.
    redis_url: config.redis.url ? withoutCredentials(config.redis.url) : describeRedis(config.redis),
    redis_password: presence(config.redis.password !== null),
    redis_sentinel_password: presence(config.redis.sentinel?.password != null),
    redis_prefix: config.redisPrefix,
    redis_connect_timeout_ms: config.redis.timeouts.connectMs,
    redis_command_timeout_ms: config.redis.timeouts.commandMs,
    http_headers_timeout_ms: config.http.headersTimeoutMs,
    http_request_timeout_ms: config.http.requestTimeoutMs,
    http_keep_alive_timeout_ms: config.http.keepAliveTimeoutMs,
    shutdown_timeout_ms: config.shutdownTimeoutMs,
    log_level: config.logLevel,
    bcrypt_cost: config.auth.bcryptCost,
    session_absolute_lifetime_seconds: config.session.absoluteLifetimeSeconds,
    webauthn_rp_id: config.webauthn.rpId,
    webauthn_rp_name: config.webauthn.rpName,
    webauthn_origins: config.webauthn.origins.join(','),
    mfa_totp_issuer: config.mfa.totpIssuer,
    mail_transport: mail.transport,
    mail_host: mail.host,
    mail_port: mail.port,
    mail_from: mail.from,
    workers_enabled: config.runWorkers,
    job_concurrency_default: config.jobConcurrency.default,
    job_concurrency_mail: config.jobConcurrency.mail,
    job_concurrency_maintenance: config.jobConcurrency.maintenance,
    // Addresses are personal data: how many, not which.
    operator_emails_count: config.operatorEmails.length,
    build_version: config.build.version,
    build_commit: config.build.commit,
    build_time: config.build.builtAt,
    session_secret: presence(set.has('SESSION_SECRET')),
    mfa_encryption_key: presence(set.has('MFA_ENCRYPTION_KEY')),
    smtp_credentials: presence(mail.auth),
    ...Object.fromEntries(providerVariables),
  };
}
