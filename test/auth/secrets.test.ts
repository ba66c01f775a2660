// One-time codes exist in clear only in the mail that carries them: after a whole register →
// verify → forgot → reset flow, no code is in any log line (debug level), mail subject, job run
// payload, stored mail record or audit event. Run with the SMTP transport and with the log one.
import { capturingLogger } from '../support/logs';
import { codeIn, TestSmtpServer } from '../support/smtp';
import { startTestApp, type TestApp } from '../support/test-app';
import { waitFor } from '../support/wait';
import { OneTimeCodes } from '../../src/accounts/one-time-codes';

const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'purple elephant riding a bicycle';

/** Every code issued in this process, as `OneTimeCodes.issue` returned it. */
const issued = jest.spyOn(OneTimeCodes.prototype, 'issue');
const issuedCodes = async () => Promise.all(issued.mock.results.map(async (r) => (await r.value).code as string));

async function allFinal(t: TestApp) {
  await waitFor('every job run to be final', async () => {
    const live = await t.ctx.db('job_runs').whereNotIn('state', ['completed', 'cancelled', 'discarded']);
    return live.length === 0;
  });
}

/** Where a code must never be: logs, job payloads, mail records, audit events. */
async function expectNowhere(t: TestApp, codes: string[], logs: string[]) {
  const stored = JSON.stringify({
    runs: await t.ctx.db('job_runs').select('payload', 'errors'),
    mail: await t.ctx.db('mail_messages').select('subject', 'text', 'html'),
    audit: await t.ctx.db('audit_events').select('data'),
  });
  const logged = logs.join('\n');
  expect(codes.length).toBeGreaterThan(0);
  for (const code of codes) {
    expect({ code, inStore: stored.includes(code), inLogs: logged.includes(code) }).toEqual({ code, inStore: false, inLogs: false });
  }
}

describe('with SMTP', () => {
  const logs: string[] = [];
  let smtp: TestSmtpServer;
  let t: TestApp;
  beforeAll(async () => {
    smtp = await TestSmtpServer.start();
    t = await startTestApp({ BCRYPT_COST: '4', SMTP_URL: smtp.url, LOG_LEVEL: 'debug' }, { workers: true, logger: capturingLogger(logs) });
  });
  afterAll(async () => {
    await t?.close();
    await smtp?.stop();
  });

  it('register → verify → forgot → reset leaves no code anywhere but in the mails', async () => {
    issued.mockClear();
    const email = `secrets-${Date.now()}@example.com`;
    const reg = await t.http.post('/v1/auth/register').send({ email, password: PASSWORD, transport: 'bearer' }).expect(201);
    const auth = `Bearer ${reg.body.token}`;
    const verification = await smtp.waitForMessage((m) => m.to.includes(email) && m.subject === 'Confirm your email address');
    await t.http.post('/v1/auth/verify-email').set('Authorization', auth).send({ code: codeIn(verification) }).expect(200);
    await t.http.post('/v1/auth/password/forgot').send({ email }).expect(202);
    const reset = await smtp.waitForMessage((m) => m.to.includes(email) && m.subject === 'Reset your password');
    await t.http.post('/v1/auth/password/reset').send({ email, code: codeIn(reset), new_password: NEW_PASSWORD }).expect(204);
    await allFinal(t);

    const codes = await issuedCodes();
    expect(codes).toEqual([codeIn(verification), codeIn(reset)]);
    for (const message of smtp.messages) for (const code of codes) expect(message.subject).not.toContain(code);
    await expectNowhere(t, codes, logs);
    // The stored copies say a code was sent, without it.
    const records = await t.ctx.db('mail_messages').where({ to: email }).orderBy('id');
    expect(records.map((r: any) => r.template)).toEqual(['verifyEmail', 'passwordReset', 'passwordChanged']);
    expect(records[0].text).toContain('Your verification code is [redacted].');
  });
});

describe('with the log transport', () => {
  const logs: string[] = [];
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ BCRYPT_COST: '4', LOG_LEVEL: 'debug' }, { workers: true, logger: capturingLogger(logs) });
  });
  afterAll(() => t?.close());

  it('logs that a message went out, never its code', async () => {
    issued.mockClear();
    const email = `secrets-log-${Date.now()}@example.com`;
    await t.http.post('/v1/auth/register').send({ email, password: PASSWORD }).expect(201);
    await t.http.post('/v1/auth/password/forgot').send({ email }).expect(202);
    await waitFor('both codes issued', async () => issued.mock.results.length === 2);
    await allFinal(t);
    expect(logs.filter((l) => l.includes('mail (log transport, not sent)'))).toHaveLength(2);
    await expectNowhere(t, await issuedCodes(), logs);
  });
});
