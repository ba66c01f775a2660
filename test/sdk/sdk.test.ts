// The contract as client teams use it: generate a TypeScript client from openapi.yaml with
// openapi-typescript + openapi-fetch, type-check it and the golden flows (test/sdk/client/flows.ts)
// in strict mode, then run those flows through it against the real service. Every answer the
// client receives is also checked against the contract.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Middleware } from 'openapi-fetch';
import type { Response as SupertestResponse } from 'supertest';
import { projectRoot } from '../../src/config';
import { loadContract } from '../../src/contract';
import * as store from '../../src/jobs/run-lifecycle-store';
import { assertMatchesContract } from '../support/contract-validator';
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { ownerDatabase } from '../support/orgs';

const CLIENT_DIR = path.join(projectRoot, 'test/sdk/client');
const GENERATED = path.join(CLIENT_DIR, 'generated/api.d.ts');
const PASSWORD = 'a long and uncommon passphrase 42';

let t: TestApp;
let server: http.Server;
let baseUrl: string;
const checked: string[] = [];

/** Checks each answer the generated client receives against the contract, like the test client does. */
const contractCheck: Middleware = {
  async onResponse({ request, response }) {
    const text = await response.clone().text();
    const headers = Object.fromEntries(response.headers.entries());
    let body: unknown = text;
    if (/json/.test(headers['content-type'] ?? '') && text) body = JSON.parse(text);
    const url = new URL(request.url);
    assertMatchesContract(request.method, url.pathname + url.search, { status: response.status, headers, body, text } as unknown as SupertestResponse);
    checked.push(`${request.method} ${url.pathname} ${response.status}`);
    return undefined;
  },
};

beforeAll(async () => {
  // Generated at test time from the contract as it is now (and ignored by git).
  fs.mkdirSync(path.dirname(GENERATED), { recursive: true });
  execFileSync(process.execPath, [path.join(projectRoot, 'node_modules/openapi-typescript/bin/cli.js'), path.join(projectRoot, 'openapi.yaml'), '--output', GENERATED], {
    stdio: 'pipe',
  });
  t = await startTestApp({ BCRYPT_COST: '4' });
  server = http.createServer(t.server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await t?.close();
});

// Loaded after generation: flows.ts imports the generated types (types only, so nothing of
// them is needed at run time). Not typed through an import here: the project's own type-check runs
// before any test has generated them; the strict check of flows.ts is the first test below.
const flows = () => require('./client/flows');
const client = () => flows().apiClient(baseUrl, [contractCheck]);

it('generates types with no empty-object error types and type-checks the client and the flows in strict mode', () => {
  const generated = fs.readFileSync(GENERATED, 'utf8');
  // `Record<string, never>` where a schema lost its properties (openapi-typescript still prints it
  // for the document's absent webhooks and $defs).
  const empties = generated.split('\n').filter((l) => l.includes('Record<string, never>') && !/^export type (webhooks|\$defs) =/.test(l));
  expect(empties).toEqual([]);
  const tsc = spawnSync(process.execPath, [path.join(projectRoot, 'node_modules/typescript/bin/tsc'), '-p', path.join(CLIENT_DIR, 'tsconfig.json')], { encoding: 'utf8' });
  expect(tsc.stdout + tsc.stderr).toBe('');
  expect(tsc.status).toBe(0);
}, 120_000);

it('register → login (bearer) → me → sessions → revoke → logout → 401', async () => {
  const email = `sdk-${Date.now()}@example.com`;
  const r = await flows().accountLifecycle(client(), email, PASSWORD);
  expect(r.meEmail).toBe(email);
  // Registering signed in once; the two logins made two more sessions.
  expect(r.listed).toHaveLength(3);
  expect(r.listed.filter((s: { current: boolean }) => s.current)).toEqual([{ id: r.first, current: true }]);
  expect(r.listed.map((s: { id: string }) => s.id)).toEqual(expect.arrayContaining([r.first, r.second]));
  expect(new Date(r.firstExpiresAt).getTime()).toBeGreaterThan(Date.now());
  expect(r.revokeStatus).toBe(204);
  expect(r.revokedTokenStatus).toBe(401);
  expect(r.logoutStatus).toBe(204);
  expect(r.afterLogout).toEqual({ status: 401, code: 'unauthenticated' });
});

it('an operator lists failing job runs (two states at once) and the queues', async () => {
  const operator = await signedInUser(t.ctx, { operator: true });
  const now = t.clock.now;
  const inserted = await store.insertRuns(
    t.ctx.db,
    ['retryable', 'discarded', 'completed'].map(() => ({ kind: 'sdk.test', queue: 'sdk-q', priority: 0, maxAttempts: 1, timeoutMs: 1_000, payload: {}, scheduledAt: now, now, actorKind: 'system' as const, actorId: null, requestId: null })),
  );
  const states = ['retryable', 'discarded', 'completed'] as const;
  for (const [i, run] of inserted.entries()) {
    await t.ctx.db('job_runs').where({ id: run.id }).update({ state: states[i], finalized_at: states[i] === 'retryable' ? null : now });
  }
  const r = await flows().operatorLooksAtJobs(client(), operator.token);
  expect(r.runIds).toEqual(expect.arrayContaining([inserted[0]!.id, inserted[1]!.id]));
  expect(r.runIds).not.toContain(inserted[2]!.id);
  expect(new Set(r.runStates)).toEqual(new Set(['retryable', 'discarded']));
  expect(r.queues.map((q: { name: string }) => q.name)).toEqual(expect.arrayContaining(['default', 'mail']));
  for (const q of r.queues) expect(typeof q.paused).toBe('boolean');
});

it('reads a 422 as a typed ValidationProblem', async () => {
  const r = await flows().invalidRegistration(client());
  expect(r).toEqual({ status: 422, code: 'validation_failed', title: 'Unprocessable Content', locations: expect.arrayContaining(['body.email']) });
});

it('matches an error code with a switch the compiler checks', async () => {
  const email = `sdk-dup-${Date.now()}@example.com`;
  const r = await flows().duplicateRegistration(client(), email, PASSWORD);
  expect(r).toEqual({ status: 409, code: 'email_taken', message: 'That email already has an account: sign in instead.' });
});

describe('a retrying client (test/sdk/client/retrying.ts, README "Safe retries")', () => {
  const contract = loadContract();
  /** The writes that take a key, read from the contract as a client would at build time. */
  const keyed = new Set(
    [...contract.operations.values()].filter((op) => contract.document.paths[op.path][op.method]['x-idempotency'] === 'accepted').map((op) => `${op.method.toUpperCase()} ${op.path}`),
  );
  const retryingClient = (fetch: (request: Request) => Promise<Response>) =>
    flows().apiClient(baseUrl, [contractCheck, require('./client/retrying').retrying({ keyed, baseDelayMs: 1, maxDelayMs: 50 })], fetch);

  it('retries a write whose answer was lost, then a 503, with one key: one organisation, the replayed answer', async () => {
    const user = await signedInUser(t.ctx, { verified: true });
    const keys: (string | null)[] = [];
    const flaky = async (request: Request) => {
      keys.push(request.headers.get('Idempotency-Key'));
      if (keys.length === 1) {
        await (await fetch(request)).arrayBuffer(); // applied; the answer never reaches the client
        throw new TypeError('fetch failed');
      }
      if (keys.length === 2) {
        const problem = { type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'Try again shortly.', code: 'unavailable', request_id: 'req_sdk_retrying_503' };
        return new Response(JSON.stringify(problem), { status: 503, headers: { 'Retry-After': '0', 'Content-Type': 'application/problem+json' } });
      }
      return fetch(request);
    };
    const r = await flows().createOrg(retryingClient(flaky), user.token, 'Retried Inc');
    expect(r).toEqual({ status: 201, id: expect.stringMatching(/^org_/), replayed: 'true' });
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^"[0-9a-f-]{36}"$/);
    const owner = ownerDatabase(t); // memberships are under row-level security
    try {
      expect((await owner('memberships').where({ user_id: user.userId })).map((m) => m.org_id)).toEqual([r.id]);
    } finally {
      await owner.destroy();
    }
  });

  it('waits out a 409 idempotency_key_in_use (the key held by a request still running) and gets the one result', async () => {
    const user = await signedInUser(t.ctx, { verified: true });
    // A request still running holds the key's lock: here the test holds it, on a connection of its own,
    // from the first attempt until the service has answered it.
    const holder = ownerDatabase(t);
    const statuses: number[] = [];
    const keys: (string | null)[] = [];
    try {
      const holding = async (request: Request) => {
        const header = request.headers.get('Idempotency-Key');
        keys.push(header);
        const send = async () => {
          const res = await fetch(request);
          statuses.push(res.status);
          return res;
        };
        if (keys.length > 1) return send();
        return holder.transaction(async (trx) => {
          // The Structured Field string's content is the key the service locks on.
          await trx.raw("select pg_advisory_xact_lock(hashtextextended(? || ' ' || ?, 0))", [user.userId, header!.slice(1, -1)]);
          return send();
        });
      };
      const r = await flows().createOrg(retryingClient(holding), user.token, 'Waited Inc');
      expect(statuses).toEqual([409, 201]);
      expect(r).toEqual({ status: 201, id: expect.stringMatching(/^org_/), replayed: null });
      expect(new Set(keys).size).toBe(1);
    } finally {
      await holder.destroy();
    }
  });

  it("is what README shows as the middleware's core", () => {
    const readme = fs.readFileSync(path.join(projectRoot, 'README.md'), 'utf8');
    const core = /Its core, for other clients to copy:\n\n```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    // Compared without comments and white space.
    const bare = (code: string) => code.replace(/\/\/.*$/gm, '').replace(/\s+/g, '');
    expect(core).toBeDefined();
    expect(bare(fs.readFileSync(path.join(CLIENT_DIR, 'retrying.ts'), 'utf8'))).toContain(bare(core!));
  });

  it('sends no key with a write that takes none, and does not retry it', async () => {
    const user = await signedInUser(t.ctx);
    const keys: (string | null)[] = [];
    const flaky = async (request: Request) => {
      keys.push(request.headers.get('Idempotency-Key'));
      await (await fetch(request)).arrayBuffer();
      throw new TypeError('fetch failed');
    };
    await expect(flows().logout(retryingClient(flaky), user.token)).rejects.toThrow('fetch failed');
    expect(keys).toEqual([null]);
  });
});

it('checked every answer the generated client received against the contract', () => {
  // 9 in the account flow, 2 for the operator, 1 invalid and 2 duplicate registrations, 2 retried writes.
  expect(checked).toHaveLength(16);
});
