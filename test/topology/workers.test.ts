// Workers apart (issue 23, item 4): an API instance with RUN_WORKERS=false and two `worker`
// processes on one database and Redis prefix. The runs are operator test mails (POST /ops/mail/test,
// the real `service.mail.send` kind), each worker sending through an SMTP server of its own in this
// process: which server a message reaches tells which worker ran it, and a server that holds a
// message's DATA keeps that run `running` for as long as the test needs. No test-only job kind.
import type { AddressInfo } from 'node:net';
import knex, { type Knex } from 'knex';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import { cloneTemplateDatabase, databaseUrl, dropDatabase } from '../support/databases';
import { assertMatchesContract } from '../support/contract-validator';
import { killAll, request, waitFor, type Answer, type Proc } from '../support/processes';
import { deploymentEnv, startInstance, startWorker, type Instance } from '../support/topology';
import { freePort } from '../support/ports';

jest.setTimeout(180_000);

/** An SMTP server that accepts every message, except those to addresses it is told to hold. */
class Smtp {
  readonly accepted: string[] = [];
  /** Messages whose DATA was read and not answered yet: their sender's run is still running. */
  readonly held: { to: string; answer: (err?: Error) => void }[] = [];
  private readonly holding = new Set<string>();

  private constructor(
    private readonly server: SMTPServer,
    readonly url: string,
  ) {}

  static async start(): Promise<Smtp> {
    let self: Smtp | null = null;
    const server = new SMTPServer({
      disabledCommands: ['STARTTLS'], // smtp-server's bundled certificate has expired
      authOptional: true,
      logger: false,
      closeTimeout: 1_000,
      onData(stream, session: SMTPServerSession, callback) {
        stream.resume();
        stream.on('end', () => self!.receive(session.envelope.rcptTo.map((r) => r.address).join(','), callback));
      },
    });
    server.on('error', () => undefined);
    const port = await new Promise<number>((resolve) => {
      const listener = server.listen(0, '127.0.0.1', () => resolve((listener.address() as AddressInfo).port));
    });
    self = new Smtp(server, `smtp://127.0.0.1:${port}`);
    return self;
  }

  hold(to: string): void {
    this.holding.add(to);
  }

  /** Stops holding `to`; a message held so far is refused (451), so nothing of it is delivered. */
  refuseHeld(to: string): void {
    this.holding.delete(to);
    for (const h of this.held.filter((h) => h.to === to)) h.answer(Object.assign(new Error('try again later'), { responseCode: 451 }));
  }

  private receive(to: string, answer: (err?: Error) => void): void {
    if (this.holding.has(to)) this.held.push({ to, answer });
    else {
      this.accepted.push(to);
      setTimeout(answer, 100); // a little time per message, so both workers get some of a burst
    }
  }

  stop(): Promise<void> {
    for (const h of this.held) h.answer(new Error('stopping'));
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const PASSWORD = 'correct horse battery staple';
let dbName: string;
let db: Knex;
let api: Instance;
const workers: { name: string; proc: Proc; smtp: Smtp; metricsPort: number }[] = [];
let auth: Record<string, string>;

/** An operator's request to the API instance, its answer checked against the contract. */
async function ops(method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await request(api.port, method, path, { headers: auth, body });
  assertMatchesContract(method, path, { ...res, text: JSON.stringify(res.body) } as any);
  return res;
}

async function sendTestMail(to: string): Promise<number> {
  const res = await ops('POST', '/ops/mail/test', { to });
  expect(res.status).toBe(202);
  return res.body.job_run_id;
}

const run = async (id: number) => (await ops('GET', `/ops/jobs/runs/${id}`)).body;
const waitForState = (id: number, state: string, ms = 20_000) =>
  waitFor(`run ${id} ${state}`, async () => {
    const now = await run(id);
    return now.state === state ? now : null;
  }, ms);
/** The worker whose SMTP server holds a message to `to` (the one running its run). */
const holderOf = (to: string) => waitFor(`a worker to hold the mail to ${to}`, () => workers.find((w) => w.smtp.held.some((h) => h.to === to)), 20_000);
const loggedBy = (w: { proc: Proc }, message: string, runId: number) => w.proc.logs().filter((l) => l.message === message && l.run_id === runId).length;
/** A worker logs an attempt's end just after writing it: the row may say so a moment before the log does. */
const waitForLog = (what: string, check: () => boolean) => waitFor(what, async () => check(), 5_000);

beforeAll(async () => {
  dbName = await cloneTemplateDatabase();
  db = knex({ client: 'pg', connection: databaseUrl(dbName), pool: { min: 0, max: 1 } });
  const env = deploymentEnv(databaseUrl(dbName), { RUN_WORKERS: 'false' });
  const smtps = await Promise.all([Smtp.start(), Smtp.start()]);
  const metricsPorts = [await freePort(), await freePort()];
  const [started, a, b] = await Promise.all([
    startInstance('api', env),
    startWorker({ ...env, SMTP_URL: smtps[0]!.url, METRICS_PORT: String(metricsPorts[0]) }),
    startWorker({ ...env, SMTP_URL: smtps[1]!.url, METRICS_PORT: String(metricsPorts[1]) }),
  ]);
  api = started;
  workers.push({ name: 'worker A', proc: a, smtp: smtps[0]!, metricsPort: metricsPorts[0]! }, { name: 'worker B', proc: b, smtp: smtps[1]!, metricsPort: metricsPorts[1]! });

  const signedUp = await request(api.port, 'POST', '/v1/auth/register', { body: { email: 'ops@example.com', password: PASSWORD, transport: 'bearer' } });
  expect(signedUp.status).toBe(201);
  await db('users').where({ email: 'ops@example.com' }).update({ is_operator: true, email_verified_at: new Date() });
  auth = { Authorization: `Bearer ${signedUp.body.token}` };
});
afterAll(async () => {
  await killAll();
  await Promise.all(workers.map((w) => w.smtp.stop()));
  await db?.destroy();
  if (dbName) await dropDatabase(dbName);
});

it('runs each run once: a burst of test mails is shared by both workers, every message sent once, one attempt each', async () => {
  const to = Array.from({ length: 20 }, (_, i) => `once-${i}@example.com`);
  const ids = await Promise.all(to.map(sendTestMail));
  for (const id of ids) expect(await waitForState(id, 'completed')).toMatchObject({ attempt: 1, errors: [] });

  const sent = workers.flatMap((w) => w.smtp.accepted.filter((a) => a.startsWith('once-')));
  expect(sent.sort()).toEqual([...to].sort());
  const completions = () => workers.reduce((n, w) => n + ids.reduce((m, id) => m + loggedBy(w, 'job completed', id), 0), 0);
  await waitForLog('a log line per completed run', () => completions() >= ids.length);
  const completedBy = workers.map((w) => ids.filter((id) => loggedBy(w, 'job completed', id) > 0));
  expect(completedBy.flat().sort()).toEqual([...ids].sort()); // each run completed by one worker, once
  expect(completedBy.map((c) => c.length).every((n) => n > 0)).toBe(true); // and the work was shared
});

it('cancel, sent to the API instance, stops the run on the worker that holds it; retry runs it again on a worker', async () => {
  const to = 'hold-cancel@example.com';
  for (const w of workers) w.smtp.hold(to);
  const id = await sendTestMail(to);
  const holder = await holderOf(to);
  expect((await run(id)).state).toBe('running');

  const retryRunning = await ops('POST', `/ops/jobs/runs/${id}/retry`);
  expect(retryRunning.status).toBe(422);
  expect(retryRunning.body.code).toBe('job_running');

  const cancel = await ops('POST', `/ops/jobs/runs/${id}/cancel`);
  expect(cancel.status).toBe(202); // accepted: signalled to whichever process runs it
  expect(cancel.body.state).toBe('running');
  expect(await waitForState(id, 'cancelled')).toMatchObject({ attempt: 1 });
  await waitForLog('the holder to log the cancel', () => loggedBy(holder, 'job cancelled while running', id) > 0);
  for (const w of workers) expect(loggedBy(w, 'job cancelled while running', id)).toBe(w === holder ? 1 : 0);

  // The worker stopped waiting for the send, but nodemailer has no way to abort a message in
  // DATA: its SMTP conversation outlives the cancel. The server refuses it, so the retry's
  // delivery is the one the test counts.
  for (const w of workers) w.smtp.refuseHeld(to);
  const retry = await ops('POST', `/ops/jobs/runs/${id}/retry`);
  expect(retry.status).toBe(200);
  expect(await waitForState(id, 'completed')).toMatchObject({ attempt: 2 });
  expect(workers.flatMap((w) => w.smtp.accepted.filter((a) => a === to))).toEqual([to]);
});

it('re-delivers the run of a worker killed mid-run (SIGKILL) to the other worker, recording the lost attempt', async () => {
  const to = 'hold-kill@example.com';
  for (const w of workers) w.smtp.hold(to);
  const id = await sendTestMail(to);
  const holder = await holderOf(to);
  const survivor = workers.find((w) => w !== holder)!;
  survivor.smtp.refuseHeld(to); // stops holding: the survivor's attempt will be accepted

  process.kill(-holder.proc.child.pid!, 'SIGKILL'); // no shutdown, no goodbye to Redis or PostgreSQL
  await holder.proc.exit;
  // BullMQ's stalled-job check hands the job to the survivor: the dead worker's lock lapses within
  // 30 s, and a check that finds it lapsed comes every 30 s, one may be skipped as the dead worker
  // had just made one: 60–90 s at worst.
  const done = await waitForState(id, 'completed', 150_000);
  expect(done).toMatchObject({ attempt: 2, errors: [{ attempt: 1, message: 'the worker running this attempt stopped before it finished' }] });
  expect(survivor.smtp.accepted.filter((a) => a === to)).toEqual([to]);
  expect(holder.smtp.accepted.filter((a) => a === to)).toEqual([]);
  await waitForLog('the survivor to log the completion', () => loggedBy(survivor, 'job completed', id) > 0);
  expect(loggedBy(survivor, 'job completed', id)).toBe(1);
  // The survivor's stalled-job check found it: counted for Prometheus (job_runs_stalled_total).
  const metrics = await (await fetch(`http://127.0.0.1:${survivor.metricsPort}/metrics`)).text();
  expect(metrics).toMatch(/^job_runs_stalled_total\{queue="mail"\} 1$/m);
});
