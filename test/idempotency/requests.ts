// For each operation that takes an Idempotency-Key, a setup that makes one valid request of it:
// who sends it, where, with which body. The replay test runs every entry and fails on an accepting
// operation with no entry here, so an operation that starts taking a key gets a test with it.
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/test-app';
import type { Db } from '../../src/platform/database';
import { signedInUser } from '../support/users';
import { addMember, createInvitation, createProject, deleteOrg, orgWithOwner, ownerDatabase } from '../support/orgs';
import { hashToken, newSessionToken } from '../../src/sessions/tokens';
import { insertPasskey } from '../../src/passkeys/store';
import { newId } from '../../src/ids';

export interface KeyedCall {
  method: 'post' | 'patch';
  url: string;
  /** The Authorization header. */
  auth: string;
  body?: Record<string, unknown>;
}

type Setup = (t: TestApp, owner: Db) => Promise<KeyedCall>;

let n = 0;
const unique = (what: string) => `${what} ${++n}-${randomUUID().slice(0, 8)}`;

export const KEYED_REQUESTS: Record<string, Setup> = {
  async resendVerificationEmail(t) {
    const user = await signedInUser(t.ctx);
    return { method: 'post', url: '/v1/auth/verify-email/resend', auth: user.auth };
  },
  async renamePasskey(t) {
    const user = await signedInUser(t.ctx);
    const id = newId('pky');
    await insertPasskey(t.ctx.db, {
      id,
      userId: user.userId,
      credentialId: randomUUID(),
      publicKey: Buffer.from('not a real key'),
      signCount: 0,
      transports: [],
      deviceType: 'singleDevice',
      backedUp: false,
      aaguid: '00000000-0000-0000-0000-000000000000',
      name: 'Old name',
      createdAt: t.ctx.now(),
    });
    return { method: 'patch', url: `/v1/auth/passkeys/${id}`, auth: user.auth, body: { name: 'Laptop' } };
  },
  async createOrg(t) {
    const user = await signedInUser(t.ctx, { verified: true });
    return { method: 'post', url: '/v1/orgs', auth: user.auth, body: { name: unique('Keyed Org') } };
  },
  async updateOrg(t) {
    const { owner, org } = await orgWithOwner(t);
    return { method: 'patch', url: `/v1/orgs/${org.id}`, auth: owner.auth, body: { name: unique('Renamed') } };
  },
  async restoreOrg(t) {
    const { owner, org } = await orgWithOwner(t);
    await deleteOrg(t, owner, org.id);
    return { method: 'post', url: `/v1/orgs/${org.id}/restore`, auth: owner.auth };
  },
  async leaveOrg(t, db) {
    const { org } = await orgWithOwner(t);
    const member = await addMember(t, db, org.id, 'member');
    return { method: 'post', url: `/v1/orgs/${org.id}/leave`, auth: member.auth };
  },
  async updateMemberRole(t, db) {
    const { owner, org } = await orgWithOwner(t);
    const member = await addMember(t, db, org.id, 'member');
    return { method: 'patch', url: `/v1/orgs/${org.id}/members/${member.userId}`, auth: owner.auth, body: { role: 'admin' } };
  },
  async createInvitation(t) {
    const { owner, org } = await orgWithOwner(t);
    return { method: 'post', url: `/v1/orgs/${org.id}/invitations`, auth: owner.auth, body: { email: `invitee-${randomUUID()}@example.com`, role: 'member' } };
  },
  async resendInvitation(t) {
    const { owner, org } = await orgWithOwner(t);
    const invitation = await createInvitation(t, owner, org.id, { email: `invitee-${randomUUID()}@example.com`, role: 'member' });
    return { method: 'post', url: `/v1/orgs/${org.id}/invitations/${invitation.id}/resend`, auth: owner.auth };
  },
  async acceptInvitation(t, db) {
    const { owner, org } = await orgWithOwner(t);
    const invitee = await signedInUser(t.ctx, { verified: true });
    const token = newSessionToken();
    const now = t.ctx.now();
    // Inserted as the tables' owner: the API only ever mails the token.
    await db('invitations').insert({
      id: newId('inv'),
      org_id: org.id,
      email: invitee.email,
      role: 'member',
      token_hash: hashToken(token),
      invited_by: owner.userId,
      created_at: now,
      expires_at: new Date(now.getTime() + 24 * 3600_000),
    });
    return { method: 'post', url: '/v1/invitations/accept', auth: invitee.auth, body: { token } };
  },
  async createProject(t) {
    const { owner, org } = await orgWithOwner(t);
    return { method: 'post', url: `/v1/orgs/${org.id}/projects`, auth: owner.auth, body: { name: unique('Project'), description: 'Keyed' } };
  },
  async updateProject(t) {
    const { owner, org } = await orgWithOwner(t);
    const project = await createProject(t, owner, org.id, { name: unique('Project') });
    return { method: 'patch', url: `/v1/orgs/${org.id}/projects/${project.id}`, auth: owner.auth, body: { description: 'Changed once' } };
  },
  async runJobNow(t) {
    const operator = await signedInUser(t.ctx, { operator: true });
    return { method: 'post', url: '/ops/jobs/definitions/service.retention.enforce/run', auth: operator.auth };
  },
  async sendTestMail(t) {
    const operator = await signedInUser(t.ctx, { operator: true });
    return { method: 'post', url: '/ops/mail/test', auth: operator.auth, body: { to: `ops-${randomUUID()}@example.com` } };
  },
};

/** Sends `call` (through the contract-checking client), with `key` as its Idempotency-Key when given. */
export function send(t: TestApp, call: KeyedCall, key?: string) {
  let request = t.http[call.method](call.url).set('Authorization', call.auth);
  if (key !== undefined) request = request.set('Idempotency-Key', key);
  return call.body ? request.send(call.body) : request;
}

/** A new key, as a client sends it: a UUID as a Structured Field string. */
export const newKey = () => `"${randomUUID()}"`;

/**
 * Every table's row count and a digest of its rows (as the tables' owner, row-level security
 * aside): equal digests, nothing written.
 */
export async function databaseDigest(db: Db): Promise<Record<string, string>> {
  const { rows: tables } = await db.raw<{ rows: { name: string }[] }>("select tablename as name from pg_tables where schemaname = 'public' and tablename not like 'knex\\_%' order by 1");
  const digest: Record<string, string> = {};
  for (const { name } of tables) {
    const { rows } = await db.raw<{ rows: { n: number; md5: string }[] }>(`select count(*)::int as n, md5(coalesce(string_agg(r::text, '|' order by r::text), '')) as md5 from "${name}" r`);
    digest[name] = `${rows[0]!.n} rows, ${rows[0]!.md5}`;
  }
  return digest;
}

/**
 * The test file's app and a pool as the tables' owner (checks that row-level security would hide),
 * started before its tests and closed after them; read `app.t` and `app.owner` inside tests.
 */
export function appForFile(...args: Parameters<typeof startTestApp>) {
  const app = {} as { t: TestApp; owner: Db };
  beforeAll(async () => {
    app.t = await startTestApp(...args);
    app.owner = ownerDatabase(app.t);
  });
  afterAll(async () => {
    await app.owner?.destroy();
    await app.t?.close();
  });
  return app;
}
