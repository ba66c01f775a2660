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
