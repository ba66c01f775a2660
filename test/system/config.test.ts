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
