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
  const production = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/app', SESSION_SECRET: 'x'.repeat(32), PUBLIC_BASE_URL: 'https://api.example.com', SMTP_URL: 'smtp://mail.example.com:587' };

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
