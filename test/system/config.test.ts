import { ConfigError, loadConfig } from '../../src/config';

describe('configuration', () => {
  it('reads the job concurrency per queue, with defaults', () => {
    expect(loadConfig({}).jobConcurrency).toEqual({ default: 200, mail: 5, maintenance: 1 });
    expect(loadConfig({ JOB_CONCURRENCY_DEFAULT: '50', JOB_CONCURRENCY_MAIL: '2' }).jobConcurrency).toEqual({ default: 50, mail: 2, maintenance: 1 });
  });

  it('refuses a concurrency that is not a positive integer, naming the variable', () => {
    expect(() => loadConfig({ JOB_CONCURRENCY_MAIL: '0' })).toThrow(new ConfigError('JOB_CONCURRENCY_MAIL must be at least 1, got "0"'));
    expect(() => loadConfig({ JOB_CONCURRENCY_DEFAULT: 'many' })).toThrow(ConfigError);
  });

  it('DATABASE_POOLER: session (also unset or none) or transaction; anything else is refused, naming the values', () => {
    expect([undefined, 'none', 'session', 'transaction'].map((v) => loadConfig({ DATABASE_POOLER: v }).databasePooler)).toEqual(['session', 'session', 'session', 'transaction']);
    expect(() => loadConfig({ DATABASE_POOLER: 'statement' })).toThrow(new ConfigError('DATABASE_POOLER must be session (or none: a direct connection) or transaction, got "statement"'));
  });
});

describe('in production', () => {
  const production = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/app', SESSION_SECRET: 'x'.repeat(32), PUBLIC_BASE_URL: 'https://api.example.com', SMTP_URL: 'smtp://mail.example.com:587', MFA_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64') };

  it('starts with the required settings', () => {
    expect(loadConfig(production)).toMatchObject({ env: 'production', trustProxy: false, mail: { transport: 'smtp' } });
  });

  it('refuses TRUST_PROXY=true (every hop trusted), accepts a hop count or addresses', () => {
    expect(() => loadConfig({ ...production, TRUST_PROXY: 'true' })).toThrow(/TRUST_PROXY=true trusts every hop/);
    expect(loadConfig({ ...production, TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ ...production, TRUST_PROXY: '10.0.0.0/8' }).trustProxy).toBe('10.0.0.0/8');
  });

  it('refuses the log transport unless MAIL_TRANSPORT=log asks for it', () => {
    const { SMTP_URL: _smtp, ...noSmtp } = production;
    expect(() => loadConfig(noSmtp)).toThrow(/MAIL_TRANSPORT=log/);
    expect(loadConfig({ ...noSmtp, MAIL_TRANSPORT: 'log' }).mail.transport).toBe('log');
  });

  it('outside production, the log transport is the default without SMTP_URL', () => {
    expect(loadConfig({}).mail.transport).toBe('log');
    expect(() => loadConfig({ MAIL_TRANSPORT: 'smtp' })).toThrow(/needs SMTP_URL/);
  });
});

describe('second factors and passkeys', () => {
  const production = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/app', SESSION_SECRET: 'x'.repeat(32), PUBLIC_BASE_URL: 'https://api.example.com', SMTP_URL: 'smtp://mail.example.com:587' };

  it('needs MFA_ENCRYPTION_KEY in production, as 32 bytes of base64 or hex', () => {
    expect(() => loadConfig(production)).toThrow(/MFA_ENCRYPTION_KEY/);
    expect(loadConfig({ ...production, MFA_ENCRYPTION_KEY: Buffer.alloc(32, 2).toString('base64') }).mfa.encryptionKey).toEqual(Buffer.alloc(32, 2));
    expect(loadConfig({ ...production, MFA_ENCRYPTION_KEY: '03'.repeat(32) }).mfa.encryptionKey).toEqual(Buffer.alloc(32, 3));
    expect(() => loadConfig({ ...production, MFA_ENCRYPTION_KEY: 'too-short' })).toThrow(/must be 32 bytes/);
  });

  it('derives a development key from SESSION_SECRET (stable, different per secret)', () => {
    expect(loadConfig({}).mfa.encryptionKey).toHaveLength(32);
    expect(loadConfig({ SESSION_SECRET: 'a' }).mfa.encryptionKey).toEqual(loadConfig({ SESSION_SECRET: 'a' }).mfa.encryptionKey);
    expect(loadConfig({ SESSION_SECRET: 'a' }).mfa.encryptionKey).not.toEqual(loadConfig({ SESSION_SECRET: 'b' }).mfa.encryptionKey);
  });

  it('takes the RP id from the first app origin, and refuses one that is not a parent domain of every origin', () => {
    expect(loadConfig({ APP_ORIGINS: 'https://app.example.com,https://admin.app.example.com' }).webauthn).toEqual({
      rpId: 'app.example.com',
      rpName: 'Tenant API',
      origins: ['https://app.example.com', 'https://admin.app.example.com'],
    });
    expect(loadConfig({ APP_ORIGINS: 'https://app.example.com,https://www.example.com', WEBAUTHN_RP_ID: 'example.com' }).webauthn.rpId).toBe('example.com');
    expect(() => loadConfig({ APP_ORIGINS: 'https://app.example.com,https://other.example.net' })).toThrow(/WEBAUTHN_RP_ID "app.example.com" must be the host/);
    expect(loadConfig({ PORT: '4000' }).webauthn).toMatchObject({ rpId: 'localhost', origins: ['http://localhost:4000'] });
  });
});

describe('redis: one server or a Sentinel group', () => {
  const timeouts = { connectMs: 1_000, commandMs: 500 };

  it('one server by default, REDIS_PASSWORD beside the URL', () => {
    expect(loadConfig({}).redis).toEqual({ url: 'redis://127.0.0.1:6379', sentinel: null, username: null, password: null, timeouts });
    expect(loadConfig({ REDIS_URL: 'rediss://cache:6380/2', REDIS_PASSWORD: 'pw' }).redis).toMatchObject({ url: 'rediss://cache:6380/2', password: 'pw' });
  });

  it('REDIS_SENTINELS and REDIS_SENTINEL_NAME, with the data nodes’ and the Sentinels’ passwords', () => {
    const env = { REDIS_SENTINELS: 's1:26379, s2 ,[::1]:26380', REDIS_SENTINEL_NAME: 'main', REDIS_PASSWORD: 'data', REDIS_SENTINEL_PASSWORD: 'watch' };
    expect(loadConfig(env).redis).toEqual({
      url: null,
      sentinel: {
        sentinels: [
          { host: 's1', port: 26379 },
          { host: 's2', port: 26379 },
          { host: '::1', port: 26380 },
        ],
        name: 'main',
        password: 'watch',
        db: 0,
      },
      username: null,
      password: 'data',
      timeouts,
    });
  });

  it('a redis+sentinel:// REDIS_URL: credentials of the data nodes, Sentinels, master name, database', () => {
    expect(loadConfig({ REDIS_URL: 'redis+sentinel://app:p%40ss@s1:26379,s2:26380/main/3', REDIS_SENTINEL_PASSWORD: 'watch' }).redis).toEqual({
      url: null,
      sentinel: { sentinels: [{ host: 's1', port: 26379 }, { host: 's2', port: 26380 }], name: 'main', password: 'watch', db: 3 },
      username: 'app',
      password: 'p@ss',
      timeouts,
    });
    expect(loadConfig({ REDIS_URL: 'redis+sentinel://s1', REDIS_SENTINEL_NAME: 'main' }).redis.sentinel).toMatchObject({ sentinels: [{ host: 's1', port: 26379 }], name: 'main' });
  });

  it('refuses a Sentinel setting that would be ignored, or two answers to where Redis is', () => {
    expect(() => loadConfig({ REDIS_SENTINEL_NAME: 'main' })).toThrow(new ConfigError('REDIS_SENTINEL_NAME is set but no Sentinel is: set REDIS_SENTINELS, or a redis+sentinel:// REDIS_URL'));
    expect(() => loadConfig({ REDIS_SENTINEL_PASSWORD: 'watch' })).toThrow(/REDIS_SENTINEL_PASSWORD is set but no Sentinel is/);
    expect(() => loadConfig({ REDIS_SENTINELS: 's1:26379' })).toThrow(/REDIS_SENTINELS needs REDIS_SENTINEL_NAME/);
    expect(() => loadConfig({ REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_NAME: 'main', REDIS_URL: 'redis://cache:6379' })).toThrow(/not both/);
    expect(() => loadConfig({ REDIS_SENTINELS: 's1:port', REDIS_SENTINEL_NAME: 'main' })).toThrow(/"s1:port" is not a Sentinel address/);
    expect(() => loadConfig({ REDIS_URL: 'redis+sentinel://s1:26379' })).toThrow(/ends with the master name/);
    expect(() => loadConfig({ REDIS_URL: 'redis+sentinel://s1:26379/main', REDIS_SENTINEL_NAME: 'other' })).toThrow(/names the master "main" and REDIS_SENTINEL_NAME "other"/);
  });
});
