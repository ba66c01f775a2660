// GET /ops/mail and POST /ops/mail/test against a real SMTP server in the test process: the test
// email goes through the `service.mail.send` job (outbox → BullMQ → worker → nodemailer → SMTP).
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { TestSmtpServer } from '../support/smtp';
import { waitFor as waitUntil } from '../support/wait';

const waitFor = <T>(probe: () => Promise<T | null | undefined | false>, timeoutMs = 10_000, what = 'condition') => waitUntil(what, probe, timeoutMs);

const MAIL_FROM = 'Tenant API Tests <no-reply@tests.example.com>';
const SUBJECT = 'Tenant API test email';

/** Polls `fn` until it returns a truthy value; fails after `timeoutMs`. */

type ApiRun = { id: number; state: string; attempt: number; max_attempts: number; errors: { at: string; attempt: number; message: string }[]; finalized_at: string | null; [k: string]: unknown };

let requestSeq = 0;
const newRequestId = () => `req_mailtest${Date.now()}x${++requestSeq}`;

/** The run as `GET /ops/jobs/runs?kind=service.mail.send` lists it. */
async function listedRun(t: TestApp, auth: string, id: number): Promise<ApiRun | undefined> {
  const res = await t.http.get('/ops/jobs/runs?kind=service.mail.send&limit=200').set('Authorization', auth).expect(200);
  return (res.body.items as ApiRun[]).find((r) => r.id === id);
}

async function runReaching(t: TestApp, auth: string, id: number, states: string[], timeoutMs = 15_000): Promise<ApiRun> {
  return waitFor(
    async () => {
      const run = await listedRun(t, auth, id);
      return run && states.includes(run.state) ? run : null;
    },
    timeoutMs,
    `run ${id} to reach ${states.join('|')}`,
  );
}

describe('with an SMTP server', () => {
  let t: TestApp;
  let smtp: TestSmtpServer;
  let operator: Awaited<ReturnType<typeof signedInUser>>;

  beforeAll(async () => {
    smtp = await TestSmtpServer.start();
    t = await startTestApp({ SMTP_URL: smtp.url, MAIL_FROM }, { workers: true });
    operator = await signedInUser(t.ctx, { operator: true });
    // Three attempts keep the retry tests short (backoff 1 s, then 2 s).
    await t.ctx.db('job_definitions').insert({ name: 'service.mail.send', override: JSON.stringify({ max_attempts: 3 }), version: 2 });
    await t.ctx.jobs.reloadConfigs();
  });
  afterAll(async () => {
    await t?.close();
    await smtp?.stop();
  });
  afterEach(() => smtp.acceptAll());

  const countRuns = async () => Number((await t.ctx.db('job_runs').count({ count: '*' }).first())?.count);

  async function sendTest(to: string, requestId = newRequestId()) {
    const res = await t.http.post('/ops/mail/test').set('Authorization', operator.auth).set('X-Request-Id', requestId).send({ to }).expect(202);
    expect(res.headers['x-request-id']).toBe(requestId);
    return { body: res.body as { job_run_id: number; run: ApiRun; queue_paused: boolean; message: string }, requestId };
  }

  it('GET /ops/mail describes the SMTP transport without secrets', async () => {
    const res = await t.http.get('/ops/mail').set('Authorization', operator.auth).expect(200);
    expect(res.body).toEqual({ transport: 'smtp', host: '127.0.0.1', port: smtp.port, secure: false, from: MAIL_FROM, configured: true, auth: false });
  });

  it('delivers a test email to the SMTP server and the run ends completed', async () => {
    const to = 'ops-1@example.com';
    const { body, requestId } = await sendTest(to);
    expect(body.job_run_id).toBe(body.run.id);
    expect(body.queue_paused).toBe(false);
    expect(body.message).toBe(`Queued on the mail queue as job run ${body.run.id}: follow it with GET /ops/jobs/runs/${body.run.id}.`);
    expect(body.run).toMatchObject({
      kind: 'service.mail.send',
      queue: 'mail',
      state: 'available',
      attempt: 0,
      max_attempts: 3,
      errors: [],
      finalized_at: null,
      actor_kind: 'operator',
      actor_id: operator.userId,
      request_id: requestId,
    });

    const mail = await smtp.waitForMessage((m) => m.to.includes(to), 15_000);
    expect(mail.to).toEqual([to]);
    expect(mail.from).toBe('no-reply@tests.example.com');
    expect(mail.subject).toBe(SUBJECT);
    expect(mail.headers.to).toContain(to);
    expect(mail.headers['content-type']).toMatch(/^multipart\/alternative/); // text and HTML bodies
    expect(mail.raw).toContain('text/plain');
    expect(mail.raw).toContain('text/html');

    const run = await runReaching(t, operator.auth, body.run.id, ['completed']);
    expect(run).toMatchObject({ state: 'completed', attempt: 1, errors: [], actor_kind: 'operator', actor_id: operator.userId, request_id: requestId });
    expect(run.finalized_at).not.toBeNull();
    expect(run.attempted_at).not.toBeNull();

    const rows = await t.ctx.db('mail_messages').where({ job_run_id: body.run.id });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ to, subject: SUBJECT, transport: 'smtp' });
    expect(rows[0].message_id).toEqual(expect.any(String));
    expect(rows[0].text).toContain('test email');
    expect(rows[0].html).toContain('<html');

    const events = await t.ctx.db('audit_events').where({ action: 'ops.mail.test_sent' }).whereRaw("(data->>'job_run_id')::bigint = ?", [body.run.id]);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ actor_kind: 'operator', actor_id: operator.userId, request_id: requestId, target_kind: 'job_run', target_id: String(body.run.id) });
    expect(events[0].data).toEqual({ to, job_run_id: body.run.id });
  });

  it('says so when the mail queue is paused, and the email goes out once it is resumed', async () => {
    await t.http.post('/ops/queues/mail/pause').set('Authorization', operator.auth).expect(200);
    try {
      const to = 'ops-paused@example.com';
      const { body } = await sendTest(to);
      expect(body.queue_paused).toBe(true);
      expect(body.message).toBe(`Queued as job run ${body.run.id}, but the mail queue is paused: the email waits until an operator resumes it (POST /ops/queues/mail/resume).`);
      expect(body.run).toMatchObject({ queue: 'mail', state: 'available' });
      // Paused means nothing runs: the run is still waiting a moment later, and no email arrived.
      await new Promise((r) => setTimeout(r, 500));
      expect((await listedRun(t, operator.auth, body.run.id))?.state).toBe('available');
      expect(smtp.messages.filter((m) => m.to.includes(to))).toEqual([]);

      await t.http.post('/ops/queues/mail/resume').set('Authorization', operator.auth).expect(200);
      await smtp.waitForMessage((m) => m.to.includes(to), 15_000);
      await runReaching(t, operator.auth, body.run.id, ['completed']);
    } finally {
      await t.ctx.services.queues.resume('mail', { actor: { kind: 'operator', id: operator.userId }, meta: { requestId: 'req_mailtest_cleanup', ip: null, userAgent: null } });
    }
  });

  it('retries an SMTP refusal with backoff, records each error and discards the run after max_attempts', async () => {
    smtp.refuse({ code: 451 });
    const to = 'ops-2@example.com';
    const { body } = await sendTest(to);

    const retryable = await runReaching(t, operator.auth, body.run.id, ['retryable', 'discarded']);
    expect(retryable.state).toBe('retryable'); // the first failure is not final
    expect(retryable.attempt).toBe(1);
    expect(retryable.errors).toEqual([{ at: expect.any(String), attempt: 1, message: expect.stringMatching(/451/) }]);
    expect(retryable.finalized_at).toBeNull();

    const run = await runReaching(t, operator.auth, body.run.id, ['discarded']);
    expect(run.attempt).toBe(3);
    expect(run.max_attempts).toBe(3);
    expect(run.errors).toHaveLength(3);
    run.errors.forEach((e, i) => {
      expect(e).toEqual({ at: expect.any(String), attempt: i + 1, message: expect.stringMatching(/451/) });
      expect(Number.isNaN(Date.parse(e.at))).toBe(false);
    });
    expect(run.finalized_at).not.toBeNull();

    // Every attempt reached the server; nothing was accepted, recorded as sent, or left in BullMQ.
    expect(smtp.refusedCount).toBeGreaterThanOrEqual(3);
    expect(smtp.messages.filter((m) => m.to.includes(to))).toHaveLength(0);
    expect(await t.ctx.db('mail_messages').where({ job_run_id: body.run.id })).toHaveLength(0);
    expect(await t.ctx.jobs.queues.get('mail')!.getJob(String(body.run.id))).toBeUndefined();
  });

  it('completes on the second attempt when the server refuses once, keeping the first error', async () => {
    const refusedBefore = smtp.refusedCount;
    smtp.refuse({ code: 451, times: 1 });
    const to = 'ops-3@example.com';
    const { body } = await sendTest(to);

    const run = await runReaching(t, operator.auth, body.run.id, ['completed', 'discarded']);
    expect(run.state).toBe('completed');
    expect(run.attempt).toBe(2);
    expect(run.errors).toEqual([{ at: expect.any(String), attempt: 1, message: expect.stringMatching(/451/) }]);
    expect(run.finalized_at).not.toBeNull();
    expect(smtp.refusedCount).toBe(refusedBefore + 1);

    const mail = await smtp.waitForMessage((m) => m.to.includes(to));
    expect(mail.subject).toBe(SUBJECT);
    expect(await t.ctx.db('mail_messages').where({ job_run_id: body.run.id, transport: 'smtp' })).toHaveLength(1);
  });

  it('answers 422 for a recipient that is not an email address, writing nothing', async () => {
    const runsBefore = await countRuns();
    for (const to of ['not-an-email', '', 'a'.repeat(250) + '@example.com']) {
      const res = await t.http.post('/ops/mail/test').set('Authorization', operator.auth).send({ to }).expect(422);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ location: 'body.to' })]));
    }
    const missing = await t.http.post('/ops/mail/test').set('Authorization', operator.auth).send({}).expect(422);
    expect(missing.body.errors).toEqual([{ location: 'body.to', message: 'is required' }]);
    expect(await countRuns()).toBe(runsBefore);
  });

  // A retry that could only fail or send nothing useful is refused at once, saying why; one that
  // can do its work again sends the email again.
  it('retrying a completed mail sends it again, but a completed code mail answers 422 job_payload_cleared (its code was erased)', async () => {
    const { body } = await sendTest('again@example.com');
    await runReaching(t, operator.auth, body.job_run_id, ['completed']);
    const retried = await t.http.post(`/ops/jobs/runs/${body.job_run_id}/retry`).set('Authorization', operator.auth).expect(200);
    expect(retried.body.state).toBe('available');
    await waitFor(async () => smtp.messages.filter((m) => m.to.includes('again@example.com')).length === 2, 15_000, 'the second copy');

    const registered = await t.http.post('/v1/auth/register').send({ email: 'code-mail@example.com', password: 'correct horse battery staple', transport: 'bearer' }).expect(201);
    expect(registered.body.user.email).toBe('code-mail@example.com');
    const [codeRun] = await t.ctx.db('job_runs').whereRaw("payload->>'to' = ?", ['code-mail@example.com']);
    await runReaching(t, operator.auth, codeRun.id, ['completed']);
    const refused = await t.http.post(`/ops/jobs/runs/${codeRun.id}/retry`).set('Authorization', operator.auth).expect(422);
    expect(refused.body).toMatchObject({ code: 'job_payload_cleared', errors: [{ location: 'path.id', message: "the run's payload was cleared when it ended" }] });
    expect(refused.body.detail).toContain('one-time code');
    expect((await t.ctx.db('job_runs').where({ id: codeRun.id }).first()).state).toBe('completed');
    expect(await t.ctx.db('audit_events').where({ action: 'ops.job_run.retried', target_id: String(codeRun.id) })).toHaveLength(0);
  });

  it('answers 403 to a signed-in user who is not an operator, and 401 without a session', async () => {
    const user = await signedInUser(t.ctx);
    const runsBefore = await countRuns();
    const send = await t.http.post('/ops/mail/test').set('Authorization', user.auth).send({ to: 'x@example.com' }).expect(403);
    expect(send.body.code).toBe('forbidden');
    const get = await t.http.get('/ops/mail').set('Authorization', user.auth).expect(403);
    expect(get.body.code).toBe('forbidden');
    await t.http.post('/ops/mail/test').send({ to: 'x@example.com' }).expect(401);
    await t.http.get('/ops/mail').expect(401);
    expect(await countRuns()).toBe(runsBefore);
    expect(await t.ctx.db('audit_events').where({ action: 'ops.mail.test_sent', actor_id: user.userId })).toHaveLength(0);
  });
});

describe('with no SMTP configured (log transport)', () => {
  let t: TestApp;
  let operator: Awaited<ReturnType<typeof signedInUser>>;

  beforeAll(async () => {
    t = await startTestApp({ SMTP_URL: '', MAIL_FROM }, { workers: true });
    operator = await signedInUser(t.ctx, { operator: true });
  });
  afterAll(() => t?.close());

  it('GET /ops/mail says the log transport is in use', async () => {
    const res = await t.http.get('/ops/mail').set('Authorization', operator.auth).expect(200);
    expect(res.body).toEqual({ transport: 'log', host: null, port: null, secure: false, from: MAIL_FROM, configured: false, auth: false });
  });

  it('records the test email in mail_messages with transport log and completes the run', async () => {
    const to = 'ops-log@example.com';
    const requestId = newRequestId();
    const res = await t.http.post('/ops/mail/test').set('Authorization', operator.auth).set('X-Request-Id', requestId).send({ to }).expect(202);
    const id = res.body.job_run_id as number;

    const run = await runReaching(t, operator.auth, id, ['completed', 'retryable', 'discarded']);
    expect(run).toMatchObject({ state: 'completed', attempt: 1, errors: [], actor_kind: 'operator', actor_id: operator.userId, request_id: requestId });

    const rows = await t.ctx.db('mail_messages').where({ job_run_id: id });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ to, subject: SUBJECT, transport: 'log', message_id: null });
    expect(await t.ctx.db('audit_events').where({ action: 'ops.mail.test_sent', target_id: String(id) })).toHaveLength(1);
  });

  it('sends the test email even when service.mail.send is disabled, like every application email', async () => {
    await t.ctx.db('job_definitions').insert({ name: 'service.mail.send', override: JSON.stringify({ enabled: false }), version: 2 });
    await t.ctx.jobs.reloadConfigs();
    expect(t.ctx.jobs.configOf('service.mail.send').enabled).toBe(false);
    const to = 'ops-disabled@example.com';
    const res = await t.http.post('/ops/mail/test').set('Authorization', operator.auth).send({ to }).expect(202);
    const run = await runReaching(t, operator.auth, res.body.job_run_id, ['completed', 'retryable', 'discarded', 'cancelled']);
    expect(run.state).toBe('completed');
    expect(await t.ctx.db('mail_messages').where({ job_run_id: run.id, to, transport: 'log' })).toHaveLength(1);
  });
});
