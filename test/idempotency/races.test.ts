// Keys under concurrency: a retry while the first request runs (409 with Retry-After, one effect),
// a client that drops the connection before reading the answer (its retry gets the one result),
// and the last guard, the primary key, for a request that committed between another's first
// statement and its lock.
import http from 'node:http';
import net from 'node:net';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createDatabase } from '../../src/platform/database';
import { callWithKey } from '../../src/http/idempotent-call';
import type { HandlerContext } from '../../src/http/handler-types';
import type { Caller } from '../../src/sessions/service';
import { fingerprintOf } from '../../src/idempotency/key';
import { orgWithOwner } from '../support/orgs';
import { signedInUser } from '../support/users';
import { sleep, waitFor } from '../support/wait';
import { appForFile, newKey, send, type KeyedCall } from './requests';

const app = appForFile();

async function projectWrite(name: string): Promise<KeyedCall & { orgId: string }> {
  const { owner: founder, org } = await orgWithOwner(app.t);
  return { method: 'post', url: `/v1/orgs/${org.id}/projects`, auth: founder.auth, body: { name }, orgId: org.id };
}
const projectsOf = async (orgId: string) => (await app.owner('projects').where({ org_id: orgId })).map((p) => p.id);

/**
 * Holds the projects table from another connection: a request's project insert waits for it
 * inside its own transaction (so holding its key) until `release`.
 */
async function holdProjects() {
  const blocker = createDatabase(app.t.ctx.config.databaseUrl!, 1);
  const trx = await blocker.transaction();
  await trx.raw('lock table projects in exclusive mode');
  return {
    waitedFor: () =>
      waitFor('a request to wait for the projects table', async () => {
        const { rows } = await app.owner.raw<{ rows: { n: number }[] }>("select count(*)::int as n from pg_locks where relation = 'projects'::regclass and not granted");
        return rows[0]!.n > 0;
      }),
    async release() {
      if (!trx.isCompleted()) await trx.commit();
      await blocker.destroy();
    },
  };
}

it('answers 409 idempotency_key_in_use with Retry-After while the first request with the key runs; then its answer; one project', async () => {
  const call = await projectWrite('Slow');
  const key = newKey();
  const projects = await holdProjects();
  try {
    const first = send(app.t, call, key).then((res) => res);
    await projects.waitedFor();
    const second = await send(app.t, call, key).expect(409);
    expect(second.body.code).toBe('idempotency_key_in_use');
    expect(second.headers['retry-after']).toBe('1');
    // Which request the key will answer is not known yet: a different one waits too.
    expect((await send(app.t, { ...call, body: { name: 'Other' } }, key).expect(409)).body.code).toBe('idempotency_key_in_use');
    await projects.release();
    const answered = await first;
    expect(answered.status).toBe(201);
    const retried = await send(app.t, call, key).expect(201);
    expect(retried.headers['idempotent-replayed']).toBe('true');
    expect(retried.text).toBe(answered.text);
    expect(await projectsOf(call.orgId)).toEqual([answered.body.id]);
  } finally {
    await projects.release();
  }
});

describe('a client that drops the connection before reading the answer', () => {
  let server: http.Server;
  beforeAll(async () => {
    server = http.createServer(app.t.server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
  });
  afterAll(() => server?.close());

  /** Sends `call` on a raw socket; `drop` says when the client closes it (it never reads). */
  async function sendAndDrop(call: KeyedCall, key: string, drop: (socket: net.Socket) => void) {
    const body = call.body ? JSON.stringify(call.body) : '';
    const head = [`${call.method.toUpperCase()} ${call.url} HTTP/1.1`, 'Host: 127.0.0.1', `Authorization: ${call.auth}`, `Idempotency-Key: ${key}`];
    if (body) head.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`);
    const received = once(server, 'request');
    const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
    await once(socket, 'connect');
    socket.write(`${head.join('\r\n')}\r\n\r\n${body}`, () => drop(socket));
    await received;
  }

  /** The client's retry loop: the same request and key until the answer is not 409. */
  async function retry(call: KeyedCall, key: string) {
    for (;;) {
      const res = await send(app.t, call, key);
      if (res.status !== 409) return res;
      expect(res.body.code).toBe('idempotency_key_in_use');
      await sleep(50);
    }
  }

  it('right after writing: the request runs, and the retry gets its answer', async () => {
    const { owner: founder, org } = await orgWithOwner(app.t);
    await app.t.http.delete(`/v1/orgs/${org.id}`).set('Authorization', founder.auth).expect(200);
    const call: KeyedCall = { method: 'post', url: `/v1/orgs/${org.id}/restore`, auth: founder.auth };
    const key = newKey();
    await sendAndDrop(call, key, (socket) => socket.destroy());
    // The server has the request but may not have claimed the key yet: a retry sent now could run
    // first and answer fresh (CI saw it once, behind PgBouncer). Wait for the dropped request's
    // answer to be recorded (the header is a structured-field string: the key is inside quotes).
    await waitFor('the dropped request to record its answer', async () => (await app.owner('idempotency_keys').where({ key: JSON.parse(key) })).length === 1);
    const res = await retry(call, key);
    expect(res.status).toBe(200);
    expect(res.headers['idempotent-replayed']).toBe('true');
    expect(await app.owner('audit_events').where({ org_id: org.id, action: 'org.restored' })).toHaveLength(1);
  });

  it('after giving up waiting: the request still commits, and the retry gets its answer; one project', async () => {
    const call = await projectWrite('Lost answer');
    const key = newKey();
    const projects = await holdProjects();
    try {
      let dropped: net.Socket | undefined;
      await sendAndDrop(call, key, (socket) => (dropped = socket));
      await projects.waitedFor();
      dropped!.destroy(); // the client's timeout: it never reads an answer
    } finally {
      await projects.release();
    }
    const res = await retry(call, key);
    expect(res.status).toBe(201);
    expect(res.headers['idempotent-replayed']).toBe('true');
    expect(await projectsOf(call.orgId)).toEqual([res.body.id]);
  });

  it('right after writing a body: one project, whichever way the server took it', async () => {
    // Express reads no body from a connection closed before it got to the body: that request
    // fails validation (a 422 to nobody) and the retry runs it; else the retry gets its answer.
    const call = await projectWrite('Never read');
    const key = newKey();
    await sendAndDrop(call, key, (socket) => socket.destroy());
    const res = await retry(call, key);
    expect(res.status).toBe(201);
    expect(await projectsOf(call.orgId)).toEqual([res.body.id]);
    const again = await send(app.t, call, key).expect(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });
});

describe('a request that committed between the first statement and the lock', () => {
  async function racedCall(recordedFingerprint: (mine: Buffer) => Buffer) {
    const user = await signedInUser(app.t.ctx, { verified: true });
    const op = app.t.ctx.contract.operations.get('createOrg')!;
    const body = { name: 'Raced Inc' };
    const key = `raced-${user.userId}`;
    const meta = { requestId: 'req_raced_request_1', ip: null, userAgent: null };
    const mine = fingerprintOf({ method: 'post', operationId: 'createOrg', userId: user.userId, params: {}, query: {}, body });
    const handler = async ({ services }: HandlerContext<'createOrg'>) => {
      await services.audit.record({ action: 'test.raced', actor: { kind: 'user', id: user.userId }, meta });
      // The other request commits now: this transaction's first statement found no answer.
      const now = app.t.ctx.now();
      await app.owner('idempotency_keys').insert({
        user_id: user.userId,
        key,
        fingerprint: recordedFingerprint(mine),
        status: 201,
        headers: { 'Content-Type': 'application/json; charset=utf-8' },
        body: Buffer.from('{"winner":true}'),
        created_at: now,
        expires_at: new Date(now.getTime() + 3600_000),
      });
      return { status: 201 as const, body: { loser: true } };
    };
    const ctx = { app: app.t.ctx, services: app.t.ctx.services, caller: { userId: user.userId } as Caller, body, params: {}, query: {}, meta } as unknown as Parameters<typeof callWithKey>[3];
    return { user, call: () => callWithKey(app.t.ctx, op, handler as never, ctx, `"${key}"`) };
  }

  it('rolls this one back and replays the recorded answer', async () => {
    const { call } = await racedCall((mine) => mine);
    expect(await call()).toEqual({ replayed: true, answer: { status: 201, headers: { 'Content-Type': 'application/json; charset=utf-8' }, body: Buffer.from('{"winner":true}') } });
    expect(await app.owner('audit_events').where({ action: 'test.raced' })).toEqual([]);
  });

  it('rolls this one back and answers 422 when the recorded answer was for another request', async () => {
    const { call } = await racedCall(() => Buffer.alloc(32));
    await expect(call()).rejects.toMatchObject({ code: 'idempotency_key_reused', status: 422 });
    expect(await app.owner('audit_events').where({ action: 'test.raced' })).toEqual([]);
  });
});
