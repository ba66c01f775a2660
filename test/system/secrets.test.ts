// SESSION_SECRET keys only what it should, one key per purpose (HKDF), and rotating it breaks
// nothing: the database role's password does not depend on it (checked on a private PostgreSQL
// that asks for passwords, as production servers do), and recovery codes made under the old
// secret, or by a release that keyed HMACs with the secret itself, still work through HTTP.
import { createHmac } from 'node:crypto';
import knex, { type Knex } from 'knex';
import { loadConfig } from '../../src/config';
import { deriveKey, HmacKeyRing } from '../../src/platform/secret-keys';
import { connectionString, createDatabase, migrateLatest } from '../../src/platform/database';
import { appDatabase, provisionAppRole } from '../../src/platform/database-roles';
import { PrivatePostgres } from '../support/private-servers';
import { cloneTemplateDatabase, databaseUrl, dropDatabase } from '../support/databases';
import { startTestApp, type TestApp } from '../support/test-app';
import { enableTotp, MFA_TEST_ENV, PASSWORD, registerAccount } from '../support/mfa';

const OLD = 'the-old-session-secret-0123456789abcdef';
const NEW = 'the-new-session-secret-fedcba9876543210';

describe('keys derived from SESSION_SECRET', () => {
  it('differ per purpose and from the secret itself', () => {
    const keys = [deriveKey(OLD, 'one-time-codes'), deriveKey(OLD, 'recovery-codes'), deriveKey(OLD, 'mfa-encryption-key'), Buffer.from(OLD)];
    expect(new Set(keys.map((k) => k.toString('hex'))).size).toBe(4);
    expect(deriveKey(OLD, 'recovery-codes').equals(deriveKey(NEW, 'recovery-codes'))).toBe(false);

    const config = loadConfig({ NODE_ENV: 'test', SESSION_SECRET: OLD });
    const message = 'verify_email:usr_1:123456';
    expect(config.keys.oneTimeCodes.sign(message).equals(config.keys.recoveryCodes.sign(message))).toBe(false);
    // Neither is the HMAC keyed with the secret itself (what releases before this one stored).
    expect(config.keys.oneTimeCodes.sign(message).equals(createHmac('sha256', OLD).update(message).digest())).toBe(false);
  });

  it('a key ring signs with the current secret and accepts the previous ones and the legacy HMAC', () => {
    const rotated = new HmacKeyRing([NEW, OLD], 'recovery-codes');
    const before = new HmacKeyRing([OLD], 'recovery-codes');
    const message = 'recovery:usr_1:abcde-12345';
    expect(rotated.sign(message).equals(new HmacKeyRing([NEW], 'recovery-codes').sign(message))).toBe(true);
    expect(rotated.verify(message, before.sign(message))).toBe(true);
    expect(rotated.verify(message, createHmac('sha256', OLD).update(message).digest())).toBe(true);
    expect(new HmacKeyRing([NEW], 'recovery-codes').verify(message, before.sign(message))).toBe(false);
    expect(rotated.verify(message, new HmacKeyRing([OLD], 'one-time-codes').sign(message))).toBe(false);
  });
});

describe('the database role password', () => {
  let pg: PrivatePostgres;
  let owner: Knex;
  beforeAll(async () => {
    pg = await PrivatePostgres.start({ passwords: true });
    owner = createDatabase(pg.url, 2);
    await migrateLatest(owner);
  }, 60_000);
  afterAll(async () => {
    await owner?.destroy();
    await pg?.destroy();
  });

  const configWith = (secret: string) => loadConfig({ NODE_ENV: 'test', DATABASE_URL: pg.url, SESSION_SECRET: secret });
  const storedPassword = async () => (await owner('app_role_credentials').where({ role: 'tenant_api_app' }).first('password')).password as string;
  const whoAmI = async (db: Knex) => (await db.raw('select current_user as role')).rows[0].role as string;

  it('is made at random, not from SESSION_SECRET, and stays when a new instance starts with a rotated secret', async () => {
    const before = configWith(OLD);
    await provisionAppRole(owner, before); // the first instance's start
    const password = await storedPassword();
    expect(password).not.toBe(createHmac('sha256', OLD).update('database-app-role:tenant_api_app').digest('base64url'));
    expect(password.length).toBeGreaterThanOrEqual(40);

    const running = createDatabase(appDatabase(before, pg.url), 2); // an instance of the old configuration
    try {
      expect(await whoAmI(running)).toBe('tenant_api_app');
      // A rolling deploy with SESSION_SECRET rotated: the next instance provisions with the new secret.
      await provisionAppRole(owner, configWith(NEW));
      expect(await storedPassword()).toBe(password);
      // The running instance opens new connections (the old ones closed): still let in.
      await running.destroy();
      const reopened = createDatabase(appDatabase(before, pg.url), 2);
      expect(await whoAmI(reopened)).toBe('tenant_api_app');
      await reopened.destroy();
      const newInstance = createDatabase(appDatabase(configWith(NEW), pg.url), 2);
      expect(await whoAmI(newInstance)).toBe('tenant_api_app');
      await newInstance.destroy();
    } finally {
      await running.destroy();
    }
  }, 60_000);

  it('the server asks for it: a wrong one is refused (the test above proves something)', async () => {
    const url = new URL(await connectionString(appDatabase(configWith(OLD), pg.url)));
    url.password = 'wrong';
    const wrong = createDatabase(url.toString(), 1);
    await expect(wrong.raw('select 1')).rejects.toThrow(/password authentication failed/);
    await wrong.destroy();
  });

  it('a role an earlier release made keeps the password it has (instances of that release keep connecting during the upgrade)', async () => {
    await owner('app_role_credentials').delete();
    const legacy = createHmac('sha256', OLD).update('database-app-role:tenant_api_app').digest('base64url');
    await owner.raw(`alter role tenant_api_app with password '${legacy}'`);
    await provisionAppRole(owner, configWith(OLD));
    expect(await storedPassword()).toBe(legacy);
  });
});

describe('rotating SESSION_SECRET, through HTTP', () => {
  let dbName: string;
  const apps: TestApp[] = [];
  beforeAll(async () => {
    dbName = await cloneTemplateDatabase();
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await dropDatabase(dbName);
  });

  /** An instance on the shared database with these secrets. */
  async function instance(env: Record<string, string>): Promise<TestApp> {
    // The authenticator-app key stays: only SESSION_SECRET changes here.
    const app = await startTestApp({ ...MFA_TEST_ENV, MFA_ENCRYPTION_KEY: '0f'.repeat(32), ...env }, { databaseUrl: databaseUrl(dbName) });
    apps.push(app);
    return app;
  }

  const signInWithRecoveryCode = async (t: TestApp, email: string, code: string) => {
    const first = await t.http.post('/v1/auth/login').send({ email, password: PASSWORD, transport: 'bearer' }).expect(202);
    return t.http.post('/v1/auth/login/mfa').send({ challenge_token: first.body.challenge_token, recovery_code: code });
  };

  it('recovery codes made under the old secret work with SESSION_SECRET_PREVIOUS, and only with it; legacy HMACs work too', async () => {
    const before = await instance({ SESSION_SECRET: OLD });
    const account = await registerAccount(before, 'rotation');
    const { recoveryCodes } = await enableTotp(before, account);

    const withoutPrevious = await instance({ SESSION_SECRET: NEW });
    expect((await signInWithRecoveryCode(withoutPrevious, account.email, recoveryCodes[0]!)).status).toBe(401);

    const rotated = await instance({ SESSION_SECRET: NEW, SESSION_SECRET_PREVIOUS: OLD });
    expect((await signInWithRecoveryCode(rotated, account.email, recoveryCodes[0]!)).status).toBe(200);

    // A code stored by a release that keyed the HMAC with the secret itself.
    const legacy = createHmac('sha256', OLD).update(`recovery:${account.userId}:${recoveryCodes[1]}`).digest();
    const [row] = await rotated.ctx.db('recovery_codes').where({ user_id: account.userId }).whereNull('used_at').limit(1).select('id');
    await rotated.ctx.db('recovery_codes').where({ id: row.id }).update({ code_hash: legacy });
    expect((await signInWithRecoveryCode(rotated, account.email, recoveryCodes[1]!)).status).toBe(200);
  }, 60_000);
});
