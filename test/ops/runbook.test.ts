// docs/runbook.md, run as written: every ```sh block, in order, in one bash (so TOKEN, RUN_ID and
// VERSION carry from step to step), with the real curl against the service listening on a port
// and `npm run grant-operator` on its database. A `curl` shell function in front of /usr/bin/curl
// records each exchange (method, URL, status, headers, body); every answer is checked against
// openapi.yaml and each step's answers against what the runbook says they show. A step that
// stops working, or a step added without its check here, fails this test.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Writable } from 'node:stream';
import type { Response } from 'supertest';
import { startTestApp, type TestApp } from '../support/test-app';
import { assertMatchesContract } from '../support/contract-validator';
import { waitFor } from '../support/wait';
import { codeIn, TestSmtpServer } from '../support/smtp';
import type { AppContext } from '../../src/app-context';
import type { JobKind } from '../../src/jobs/kinds';

const ROOT = path.resolve(__dirname, '../..');
const RUNBOOK = path.join(ROOT, 'docs', 'runbook.md');

interface Step {
  heading: string;
  script: string;
}

/** The ```sh blocks of the runbook under their `## ` headings (other blocks, e.g. ```console, are shown only). */
function runbookSteps(markdown: string): Step[] {
  const steps: Step[] = [];
  let heading = '';
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('## ')) heading = line.slice(3).trim();
    const fence = /^```(\S*)/.exec(line);
    if (!fence) continue;
    const body: string[] = [];
    for (i++; i < lines.length && !lines[i]!.startsWith('```'); i++) body.push(lines[i]!);
    if (fence[1] !== 'sh') continue;
    const last = steps[steps.length - 1];
    if (last?.heading === heading) last.script += `\n${body.join('\n')}`;
    else steps.push({ heading, script: body.join('\n') });
  }
  return steps;
}

/** Records every curl call of the runbook, then passes its body through to stdout as curl would. */
const PRELUDE = String.raw`set -euo pipefail
curl() {
  local n
  n=$(( $(cat "$RUNBOOK_RECORD/count") + 1 ))
  echo "$n" > "$RUNBOOK_RECORD/count"
  printf '%s' "$RUNBOOK_STEP" > "$RUNBOOK_RECORD/$n.step"
  /usr/bin/curl -D "$RUNBOOK_RECORD/$n.head" -w '%{stderr}%{method} %{http_code} %{url_effective}\n' "$@" 2>>"$RUNBOOK_RECORD/$n.meta" | tee "$RUNBOOK_RECORD/$n.body"
}
`;

interface Exchange {
  step: string;
  method: string;
  url: string;
  path: string;
  status: number;
  headers: Record<string, string>;
  body: any;
  text: string;
}

function readExchanges(dir: string): Exchange[] {
  const count = Number(fs.readFileSync(path.join(dir, 'count'), 'utf8'));
  return Array.from({ length: count }, (_, i) => {
    const n = i + 1;
    const meta = fs.readFileSync(path.join(dir, `${n}.meta`), 'utf8').trim().split('\n').pop()!;
    const [, method, status, url] = /^([A-Z]+) (\d{3}) (\S+)$/.exec(meta) ?? fail(`curl call ${n} has no result line: ${meta}`);
    // The last header block (a 100 Continue comes first when there is one).
    const blocks = fs.readFileSync(path.join(dir, `${n}.head`), 'utf8').trim().split(/\r\n\r\n/);
    const headers: Record<string, string> = {};
    for (const line of blocks[blocks.length - 1]!.split('\r\n').slice(1)) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const text = fs.readFileSync(path.join(dir, `${n}.body`), 'utf8');
    let body: unknown = {};
    try {
      body = text ? JSON.parse(text) : {};
    } catch {
      /* not JSON: the contract check says whether that is allowed */
    }
    return { step: fs.readFileSync(path.join(dir, `${n}.step`), 'utf8'), method: method!, url: url!, path: new URL(url!).pathname, status: Number(status), headers, body, text };
  });
}

function fail(message: string): never {
  throw new Error(message);
}

/** Runs `script`; `typist`, given the script's stdin, answers its prompts as a person at the terminal would. */
function runBash(script: string, env: NodeJS.ProcessEnv, typist?: (stdin: Writable) => Promise<void>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], { cwd: ROOT, env, stdio: [typist ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    if (typist) typist(child.stdin!).catch((err: unknown) => child.stdin!.destroy(err as Error));
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

// ----- the service, with runs that failed ------------------------------------------------------

const failing = (name: string, maxAttempts: number): JobKind<AppContext> => ({
  name,
  description: `runbook test kind ${name}`,
  defaults: { enabled: true, max_attempts: maxAttempts, priority: 0, queue: 'default', schedule: null, timeout: '5s' },
  needsPayload: false,
  handle: async () => {
    throw new Error('upstream refused the request');
  },
});

let t: TestApp;
let smtp: TestSmtpServer;
let server: http.Server;
let base: string;
let recordDir: string;
const runs: { discarded: number; retryable: number } = { discarded: 0, retryable: 0 };

beforeAll(async () => {
  // A minute of backoff: the retryable run stays retryable while the runbook runs.
  smtp = await TestSmtpServer.start();
  t = await startTestApp({ SMTP_URL: smtp.url }, { workers: true, jobKinds: [failing('runbook.gives_up', 1), failing('runbook.tries_again', 3)], jobTiming: { backoffMs: 60_000 } });
  const system = { actor: { kind: 'system' as const, id: null } };
  const retryable = await t.ctx.jobs.enqueue(t.ctx.db, 'runbook.tries_again', {}, system);
  const discarded = await t.ctx.jobs.enqueue(t.ctx.db, 'runbook.gives_up', {}, system);
  await t.ctx.jobs.handOver([retryable, discarded]);
  runs.retryable = retryable.id;
  runs.discarded = discarded.id;
  await waitFor('the runs to fail', async () => {
    const [a, b] = await Promise.all([t.ctx.services.jobRuns.get(retryable.id), t.ctx.services.jobRuns.get(discarded.id)]);
    return a.state === 'retryable' && b.state === 'discarded';
  });
  server = http.createServer(t.server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  recordDir = fs.mkdtempSync(path.join(os.tmpdir(), 'runbook-'));
  fs.writeFileSync(path.join(recordDir, 'count'), '0');
}, 60_000);

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await t?.close();
  await smtp?.stop();
  if (recordDir) fs.rmSync(recordDir, { recursive: true, force: true });
});

// ----- what each step shows ----------------------------------------------------------------------

type Check = (exchanges: Exchange[], stdout: string) => void | Promise<void>;
const call = (e: Exchange) => `${e.method} ${e.path}${new URL(e.url).search} ${e.status}`;

const CHECKS: Record<string, Check> = {
  '0. Where the service is': (exchanges) => {
    expect(exchanges).toEqual([]);
  },
  '1. Make an operator': async (exchanges, stdout) => {
    expect(exchanges.map(call)).toEqual(['POST /v1/auth/register 201', 'POST /v1/auth/verify-email 200']);
    expect(exchanges[0]!.body.user).toMatchObject({ email: 'ops@example.com', email_verified: false, operator: false });
    expect(exchanges[1]!.body).toMatchObject({ email: 'ops@example.com', email_verified: true });
    expect(stdout).toContain('"email_verified": true');
    // grant-operator's log line names the database it used: the service's.
    const granted = stdout.split('\n').filter((l) => l.startsWith('{"')).map((l) => JSON.parse(l)).find((l) => l.message === 'operator granted');
    expect(granted).toMatchObject({ email: 'ops@example.com', database: t.ctx.config.databaseUrl });
    expect((await t.ctx.db('users').where({ email: 'ops@example.com' }).first()).is_operator).toBe(true);
  },
  '2. Sign in': (exchanges, stdout) => {
    expect(exchanges.map(call)).toEqual(['POST /v1/auth/login 200', 'GET /v1/auth/me 200']);
    expect(exchanges[0]!.body).toMatchObject({ mfa_required: false, token: expect.any(String) });
    expect(exchanges[1]!.body).toMatchObject({ email: 'ops@example.com', operator: true });
    expect(JSON.parse(stdout)).toEqual({ email: 'ops@example.com', operator: true });
  },
  '3. List failing runs': (exchanges, stdout) => {
    expect(exchanges.map(call)).toEqual(['GET /ops/jobs/runs?state=retryable,discarded 200']);
    const items: { id: number; state: string }[] = exchanges[0]!.body.items;
    expect(items.map((r) => r.id)).toEqual(expect.arrayContaining([runs.discarded, runs.retryable]));
    expect(new Set(items.map((r) => r.state))).toEqual(new Set(['retryable', 'discarded']));
    expect(stdout).toContain('"last_error": "upstream refused the request"');
  },
  '4. Retry one': (exchanges) => {
    expect(exchanges.map(call)).toEqual(['GET /ops/jobs/runs?state=discarded&limit=1 200', `POST /ops/jobs/runs/${runs.discarded}/retry 200`]);
    expect(exchanges[1]!.body).toMatchObject({ id: runs.discarded, state: 'available', attempt: 1, max_attempts: 2, finalized_at: null });
  },
  '5. Pause and resume a queue': async (exchanges) => {
    expect(exchanges.map(call)).toEqual(['GET /ops/queues 200', 'POST /ops/queues/mail/pause 200', 'POST /ops/queues/mail/resume 200']);
    expect(exchanges[0]!.body.items.map((q: { name: string }) => q.name)).toContain('mail');
    expect(exchanges[1]!.body).toMatchObject({ name: 'mail', paused: true });
    expect(exchanges[2]!.body).toMatchObject({ name: 'mail', paused: false });
    expect(await t.ctx.services.queues.isPaused('mail')).toBe(false);
  },
  '6. Send a test email': async (exchanges, stdout) => {
    expect(exchanges.map(call)).toEqual(['POST /ops/mail/test 202']);
    const { job_run_id: id } = exchanges[0]!.body;
    expect(JSON.parse(stdout)).toEqual({ job_run_id: id, queue_paused: false, message: expect.stringContaining(`job run ${id}`) });
    await waitFor('the test email to be sent', async () => (await t.ctx.services.jobRuns.get(id)).state === 'completed');
  },
  '7. Read the audit log': (exchanges) => {
    expect(exchanges.map(call)).toEqual(['GET /ops/audit?action=ops.*&limit=20 200']);
    const actions = exchanges[0]!.body.items.map((e: { action: string }) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['ops.job_run.retried', 'ops.queue.paused', 'ops.queue.resumed', 'ops.mail.test_sent']));
    expect(actions.every((a: string) => a.startsWith('ops.'))).toBe(true);
  },
  '8. Change a setting': async (exchanges, stdout) => {
    expect(exchanges.map(call)).toEqual([
      'GET /ops/settings/auth.password_min_length 200',
      'GET /ops/settings/auth.password_min_length 200',
      'PUT /ops/settings/auth.password_min_length 200',
    ]);
    expect(exchanges[2]!.body).toMatchObject({ key: 'auth.password_min_length', value: 12, source: 'override', version: exchanges[1]!.body.version + 1 });
    expect(stdout).toContain('"value": 12');
    expect(await t.ctx.db('runtime_setting_history').where({ key: 'auth.password_min_length' }).first('reason')).toEqual({ reason: 'Longer passwords (ticket SEC-42)' });
  },
};

it('docs/runbook.md works step by step against the running service', async () => {
  expect(fs.existsSync('/usr/bin/curl')).toBe(true);
  const jq = await runBash('command -v jq', process.env);
  if (jq.code !== 0) fail('The runbook pipes answers through jq: install it (apt-get install -y jq).');

  const steps = runbookSteps(fs.readFileSync(RUNBOOK, 'utf8'));
  expect(steps.map((s) => s.heading)).toEqual(Object.keys(CHECKS));

  // Each step prints a marker first, so its output can be told from the others'.
  const marker = (heading: string) => `::runbook-step ${heading}`;
  const script = PRELUDE + steps.map((s) => `RUNBOOK_STEP=${JSON.stringify(s.heading)}\necho ${JSON.stringify(marker(s.heading))}\n${s.script}`).join('\n');
  const env: NodeJS.ProcessEnv = { ...process.env, BASE: base, DATABASE_URL: t.ctx.config.databaseUrl!, NODE_ENV: 'development', LOG_LEVEL: 'info', RUNBOOK_RECORD: recordDir };
  for (const name of ['DATA_DIR', 'EMBEDDED_POSTGRES_PORT', 'OPERATOR_EMAILS', 'REDIS_PREFIX']) delete env[name];
  // Step 1 asks for the code mailed to ops@example.com: typed in once it reaches the mailbox.
  const result = await runBash(script, env, async (stdin) => {
    const mail = await smtp.waitForMessage((m) => m.to.includes('ops@example.com') && m.subject === 'Confirm your email address', 30_000);
    stdin.end(`${codeIn(mail)}\n`);
  });
  if (result.code !== 0) fail(`the runbook failed (exit ${result.code})\nstdout:\n${result.stdout.slice(-4000)}\nstderr:\n${result.stderr.slice(-4000)}`);

  const exchanges = readExchanges(recordDir);
  for (const e of exchanges) assertMatchesContract(e.method.toLowerCase(), e.url, { status: e.status, headers: e.headers, body: e.body, text: e.text } as unknown as Response);

  const output = new Map<string, string>();
  let current = '';
  for (const line of result.stdout.split('\n')) {
    if (line.startsWith('::runbook-step ')) current = line.slice('::runbook-step '.length);
    else output.set(current, `${output.get(current) ?? ''}${line}\n`);
  }
  for (const step of steps) {
    try {
      await CHECKS[step.heading]!(
        exchanges.filter((e) => e.step === step.heading),
        output.get(step.heading) ?? '',
      );
    } catch (err) {
      throw new Error(`runbook step "${step.heading}": ${err instanceof Error ? err.message : String(err)}\noutput:\n${output.get(step.heading) ?? ''}`);
    }
  }
}, 120_000);
