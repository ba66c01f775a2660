// The platform role `operator` as the real process grants it: OPERATOR_EMAILS at every start
// (verified, enabled accounts only, so a listed address squatted before its owner verifies never
// gets /ops, however often the service restarts), and the grant-operator / revoke-operator
// commands, each grant and revocation audited. Verification during a run: test/auth/operators.test.ts.
import knex, { type Knex } from 'knex';
import { cloneTemplateDatabase, databaseUrl, dropDatabase } from '../support/databases';
import { get, killAll, request, serveEnv, start, stopWithSigterm, waitFor, withTimeout, type Proc } from '../support/processes';
import { newId } from '../../src/ids';

const PASSWORD = 'correct horse battery staple';
const LISTED = 'squatted@ops.example.com,disabled@ops.example.com,verified@ops.example.com,verified-listed@ops.example.com';

const ID_CMDDISABLED = newId('usr');
const ID_CMDLISTED = newId('usr');
const ID_CMDUNVERIFIED = newId('usr');
const ID_CMDVERIFIED = newId('usr');
const ID_OPSDISABLED = newId('usr');
const ID_OPSLEGACY = newId('usr');
const ID_OPSVERIFIED = newId('usr');

let dbName: string;
let db: Knex;
beforeAll(async () => {
  dbName = await cloneTemplateDatabase();
  db = knex({ client: 'pg', connection: databaseUrl(dbName), pool: { min: 0, max: 1 } });
});
afterEach(killAll);
afterAll(async () => {
  await killAll();
  await db?.destroy();
  if (dbName) await dropDatabase(dbName);
});

async function serve(): Promise<{ proc: Proc; port: number }> {
  const { port, env } = await serveEnv(databaseUrl(dbName));
  const proc = start(['serve'], { ...env, OPERATOR_EMAILS: LISTED });
  await waitFor('GET /readyz 200', async () => (await get(port, '/readyz')).status === 200, 30_000, proc);
  return { proc, port };
}

const operator = async (email: string) => (await db('users').where({ email }).first('is_operator')).is_operator as boolean;
const audited = (action: string, userId: string) => db('audit_events').where({ action, target_id: userId }).orderBy('at');

async function command(args: string[]) {
  const proc = start(args, { NODE_ENV: 'development', DATABASE_URL: databaseUrl(dbName), LOG_LEVEL: 'info', OPERATOR_EMAILS: LISTED });
  const { code } = await withTimeout(proc.exit, 15_000, `${args[0]} to exit`);
  return { code, stderr: proc.stderr(), logs: proc.logs() };
}

describe('OPERATOR_EMAILS at start', () => {
  it('grants verified, enabled listed accounts; an unverified one stays ordinary across restarts, a disabled one never gets it', async () => {
    // Before the service starts: a listed address its owner verified, one an operator disabled
    // (verified too), and an operator whose email nobody verified (granted by an older release).
    await db('users').insert([
      { id: ID_OPSVERIFIED, email: 'verified@ops.example.com', email_verified_at: new Date() },
      { id: ID_OPSDISABLED, email: 'disabled@ops.example.com', email_verified_at: new Date(), disabled_at: new Date() },
      { id: ID_OPSLEGACY, email: 'legacy@example.com', is_operator: true },
    ]);

    const first = await serve();
    // Someone registers a listed address before its owner does: no proof of the mailbox.
    const squat = await request(first.port, 'POST', '/v1/auth/register', { body: { email: 'squatted@ops.example.com', password: PASSWORD, transport: 'bearer' } });
    expect(squat.status).toBe(201);
    const auth = { Authorization: `Bearer ${squat.body.token}` };
    expect((await get(first.port, '/v1/auth/me', auth)).body).toMatchObject({ email: 'squatted@ops.example.com', email_verified: false, operator: false });
    expect((await get(first.port, '/ops/audit', auth)).status).toBe(403);

    const granted = first.proc.logs().find((l) => l.message === 'operators granted from OPERATOR_EMAILS');
    expect(granted).toMatchObject({ count: 1, user_ids: [ID_OPSVERIFIED] });
    const warned = first.proc.logs().find((l) => l.level === 'warn' && String(l.message).startsWith('operators whose email is not verified'));
    expect(warned).toMatchObject({ user_ids: [ID_OPSLEGACY] });
    expect((await stopWithSigterm(first.proc)).code).toBe(0);

    // The next deploy: the squatted address is still unverified, the disabled account still disabled.
    const second = await serve();
    expect((await get(second.port, '/v1/auth/me', auth)).body.operator).toBe(false);
    expect((await get(second.port, '/ops/audit', auth)).status).toBe(403);
    expect(await operator('disabled@ops.example.com')).toBe(false);
    expect(await operator('verified@ops.example.com')).toBe(true);
    // Granted once, by the first start: the second found nothing to grant.
    expect(second.proc.logs().find((l) => l.message === 'operators granted from OPERATOR_EMAILS')).toBeUndefined();
    const [event, ...more] = await audited('ops.operator.granted', ID_OPSVERIFIED);
    expect(more).toEqual([]);
    expect(event).toMatchObject({ actor_kind: 'system', actor_id: null, data: { via: 'operator_emails' } });
    expect(await audited('ops.operator.granted', squat.body.user.id)).toEqual([]);
    expect(await audited('ops.operator.granted', ID_OPSDISABLED)).toEqual([]);
    await stopWithSigterm(second.proc);
  }, 120_000);
});

describe('grant-operator and revoke-operator', () => {
  it('grant refuses an unverified or a disabled account, grants a verified one with an audit event; revoke takes it away, audited', async () => {
    await db('users').insert([
      { id: ID_CMDUNVERIFIED, email: 'unverified@example.com' },
      { id: ID_CMDDISABLED, email: 'off@example.com', email_verified_at: new Date(), disabled_at: new Date() },
      { id: ID_CMDVERIFIED, email: 'ada@example.com', email_verified_at: new Date() },
    ]);

    const unverified = await command(['grant-operator', 'unverified@example.com']);
    expect(unverified.code).toBe(1);
    expect(unverified.stderr).toContain('has not verified its email address');
    const disabled = await command(['grant-operator', 'off@example.com']);
    expect(disabled.code).toBe(1);
    expect(disabled.stderr).toContain('is disabled. Enable it first');
    expect(await operator('unverified@example.com')).toBe(false);
    expect(await operator('off@example.com')).toBe(false);

    const granted = await command(['grant-operator', 'Ada@Example.com']);
    expect({ code: granted.code, stderr: granted.stderr }).toEqual({ code: 0, stderr: '' });
    expect(granted.logs.find((l) => l.message === 'operator granted')).toMatchObject({ email: 'Ada@Example.com', database: databaseUrl(dbName) });
    expect(await operator('ada@example.com')).toBe(true);
    const again = await command(['grant-operator', 'ada@example.com']);
    expect(again.code).toBe(0);
    expect(again.logs.find((l) => l.message === 'already an operator')).toBeDefined();
    const [grant, ...moreGrants] = await audited('ops.operator.granted', ID_CMDVERIFIED);
    expect(moreGrants).toEqual([]);
    expect(grant).toMatchObject({ actor_kind: 'operator', actor_id: null, data: { via: 'command_line' } });

    const revoked = await command(['revoke-operator', 'ada@example.com']);
    expect({ code: revoked.code, stderr: revoked.stderr }).toEqual({ code: 0, stderr: '' });
    expect(revoked.logs.find((l) => l.message === 'operator revoked')).toMatchObject({ email: 'ada@example.com' });
    expect(revoked.logs.find((l) => l.level === 'warn')).toBeUndefined(); // not listed in OPERATOR_EMAILS
    expect(await operator('ada@example.com')).toBe(false);
    const [revocation] = await audited('ops.operator.revoked', ID_CMDVERIFIED);
    expect(revocation).toMatchObject({ actor_kind: 'operator', actor_id: null, data: { via: 'command_line' } });

    const nobody = await command(['revoke-operator', 'nobody@example.com']);
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toContain('No account with the email nobody@example.com');
  }, 60_000);

  it('revoking an address OPERATOR_EMAILS lists warns that the next start grants it again', async () => {
    await db('users').insert({ id: ID_CMDLISTED, email: 'verified-listed@ops.example.com', email_verified_at: new Date(), is_operator: true });
    const revoked = await command(['revoke-operator', 'verified-listed@ops.example.com']);
    expect(revoked.code).toBe(0);
    expect(revoked.logs.find((l) => l.level === 'warn')?.message).toMatch(/OPERATOR_EMAILS lists this address/);
  }, 30_000);
});

// A signed-in operator loses /ops on the next request once revoked: sessions read the flag each time.
describe('revoke-operator while signed in', () => {
  it('the next /ops request answers 403', async () => {
    const { proc, port } = await serve();
    const reg = await request(port, 'POST', '/v1/auth/register', { body: { email: 'revoke-live@example.com', password: PASSWORD, transport: 'bearer' } });
    await db('users').where({ id: reg.body.user.id }).update({ email_verified_at: new Date() });
    expect((await command(['grant-operator', 'revoke-live@example.com'])).code).toBe(0);
    const auth = { Authorization: `Bearer ${reg.body.token}` };
    expect((await get(port, '/ops/audit', auth)).status).toBe(200);
    expect((await command(['revoke-operator', 'revoke-live@example.com'])).code).toBe(0);
    expect((await get(port, '/ops/audit', auth)).status).toBe(403);
    await stopWithSigterm(proc);
  }, 60_000);
});
