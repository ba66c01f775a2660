// Shared by the tenant-isolation and role sweeps: the operations read from openapi.yaml (so a new
// operation is swept without anyone listing it), valid request bodies built from the contract's
// own examples, organisations with members, a project and invitations, and database snapshots
// taken over the owner connection (which row-level security does not filter) to prove that a
// refused call changed nothing.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { parse } from 'yaml';
import type { Knex } from 'knex';
import type { Response } from 'supertest';
import { createDatabase } from '../../../src/platform/database';
import { hashToken, newSessionToken } from '../../../src/sessions/tokens';
import { newId } from '../../../src/ids';
import type { Role } from '../../../src/orgs/policy';
import type { TestApp } from '../../support/test-app';
import { signedInUser } from '../../support/users';
import { createInvitation, createOrg, createProject, deleteOrg } from '../../support/orgs';

// ---------------------------------------------------------------------------------------------
// The contract

/** What a path parameter names, told by its schema (`OrgId`, `ProjectId`, `UserId`, `InvitationId`). */
export type IdKind = 'org' | 'project' | 'member' | 'invitation';

const ID_SCHEMAS: Record<string, IdKind> = { OrgId: 'org', ProjectId: 'project', UserId: 'member', InvitationId: 'invitation' };

export type HttpMethod = 'get' | 'post' | 'patch' | 'put' | 'delete';

export interface Operation {
  operationId: string;
  method: HttpMethod;
  /** The path template, e.g. `/v1/orgs/{orgId}/projects/{id}`. */
  path: string;
  /** Path parameters in template order, each with the kind of id it takes. */
  params: { name: string; kind: IdKind }[];
  /** The first example of the JSON request body, when the operation takes one. */
  exampleBody?: Record<string, unknown>;
}

type Yaml = any;

const contract: Yaml = parse(readFileSync(join(__dirname, '../../../openapi.yaml'), 'utf8'));

function deref(node: Yaml): Yaml {
  while (node && typeof node === 'object' && typeof node.$ref === 'string') {
    const ref: string = node.$ref;
    node = ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((o: Yaml, key) => o?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], contract);
  }
  return node;
}

function exampleBodyOf(operation: Yaml): Record<string, unknown> | undefined {
  const media = deref(operation.requestBody)?.content?.['application/json'];
  if (!media) return undefined;
  if (media.examples) return deref(Object.values(media.examples)[0]).value;
  if (media.example !== undefined) return media.example;
  return deref(media.schema)?.example;
}

function paramKind(operationId: string, param: Yaml): IdKind {
  const ref: string | undefined = param.schema?.$ref;
  const kind = ref ? ID_SCHEMAS[ref.split('/').pop()!] : undefined;
  // A parameter the sweeps cannot fill must fail loudly, not shrink the sweep.
  if (!kind) throw new Error(`${operationId}: no fixture id for path parameter {${param.name}} (schema ${ref ?? 'inline'})`);
  return kind;
}

/** The contract's operations whose path `wanted` accepts (every one by default). */
export function contractOperations(wanted: (path: string) => boolean = () => true): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries<Yaml>(contract.paths)) {
    if (!wanted(path)) continue;
    for (const method of ['get', 'post', 'patch', 'put', 'delete'] as HttpMethod[]) {
      const operation = item[method];
      if (!operation) continue;
      const params = [...(item.parameters ?? []), ...(operation.parameters ?? [])].map(deref).filter((p: Yaml) => p.in === 'path');
      // Template order, so titles and URLs read like the path.
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      out.push({
        operationId: operation.operationId,
        method,
        path,
        params: names.map((name) => ({ name, kind: paramKind(operation.operationId, params.find((p: Yaml) => p.name === name)) })),
        exampleBody: exampleBodyOf(operation),
      });
    }
  }
  return out;
}

/** The operations under `/v1/orgs/{orgId}`: the ones an organisation's membership guards. */
export const orgScopedOperations = () => contractOperations((path) => path === '/v1/orgs/{orgId}' || path.startsWith('/v1/orgs/{orgId}/'));

export function contractOperation(operationId: string): Operation {
  const op = contractOperations((path) => Object.values<Yaml>(contract.paths[path]).some((o) => o?.operationId === operationId)).find((o) => o.operationId === operationId);
  if (!op) throw new Error(`openapi.yaml has no operation ${operationId}`);
  return op;
}

/** A short random tag (lower-case letters and digits) that makes names, slugs and emails fresh. */
export const tag = () => randomBytes(5).toString('hex');

/**
 * The operation's example body made fresh, so that the call would really change something if it
 * were let through: names get a tag appended, slugs a `-tag` suffix, emails a `+tag` sub-address
 * (createInvitation would otherwise answer 409 `invitation_pending` on the second try). Other
 * fields (role, description, token) stay as in the example.
 */
export function freshBody(op: Operation, unique = tag()): Record<string, unknown> | undefined {
  if (!op.exampleBody) return undefined;
  const body: Record<string, unknown> = structuredClone(op.exampleBody);
  for (const [key, value] of Object.entries(body)) {
    if (typeof value !== 'string') continue;
    if (key === 'name') body[key] = `${value} ${unique}`;
    else if (key === 'slug') body[key] = `${value.slice(0, 40 - unique.length - 1)}-${unique}`;
    else if (key === 'email') body[key] = value.replace('@', `+${unique}@`);
  }
  return body;
}

/** The template with its parameters filled in. */
export function fillPath(template: string, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`no value for {${name}} in ${template}`);
    return encodeURIComponent(value);
  });
}

/** One call through the contract-checking client (every answer is validated against openapi.yaml). */
export async function call(t: TestApp, method: HttpMethod, url: string, auth: string, body?: unknown): Promise<Response> {
  const request = t.http[method](url).set('Authorization', auth);
  return body === undefined ? await request : await request.send(body as object);
}

// ---------------------------------------------------------------------------------------------
// The database, seen by its owner

/**
 * A pool on the owner (superuser) URL of the test database: row-level security does not apply to
 * it, so it sees every tenant's rows. One connection; `.destroy()` it in afterAll.
 */
export const ownerDb = (t: TestApp): Knex => createDatabase(t.ctx.config.databaseUrl!, 1);

/** The tenant tables and the columns that order their rows. */
const TENANT_TABLES: Record<string, { orderBy: string[]; orgColumn: string }> = {
  organisations: { orderBy: ['id'], orgColumn: 'id' },
  memberships: { orderBy: ['org_id', 'user_id'], orgColumn: 'org_id' },
  invitations: { orderBy: ['id'], orgColumn: 'org_id' },
  projects: { orderBy: ['id'], orgColumn: 'org_id' },
};

export type Snapshot = Record<string, Record<string, unknown>[]>;

/** Every row and column of the tenant tables (only those of `orgIds` when given), in a fixed order. */
export async function snapshot(db: Knex, orgIds?: string[]): Promise<Snapshot> {
  const out: Snapshot = {};
  for (const [table, { orderBy, orgColumn }] of Object.entries(TENANT_TABLES)) {
    const query = db(table).select('*').orderBy(orderBy);
    out[table] = orgIds ? await query.whereIn(orgColumn, orgIds) : await query;
  }
  return out;
}

/**
 * The rate-limit counters in Redis (`<prefix>rl:<limit>:<subject>`) whose subject is one of `ids`,
 * with their values: a refused call must not spend a budget that belongs to another tenant's
 * organisation or invitation either.
 */
export async function rateLimitCounters(t: TestApp, ids: string[]): Promise<Record<string, string | null>> {
  const keys = (await t.ctx.redis.keys(`${t.ctx.config.redisPrefix}rl:*`)).filter((key) => ids.some((id) => key.includes(id))).sort();
  const values = keys.length ? await t.ctx.redis.mget(...keys) : [];
  return Object.fromEntries(keys.map((key, i) => [key, values[i] ?? null]));
}

// ---------------------------------------------------------------------------------------------
// Users and organisations

export type User = Awaited<ReturnType<typeof signedInUser>>;

export const verifiedUser = (t: TestApp): Promise<User> => signedInUser(t.ctx, { verified: true });

/** Adds members with their roles directly (no invitation round trip), keeping member_count in step as the service does. */
export async function addMembers(t: TestApp, db: Knex, orgId: string, members: { userId: string; role: Role }[]): Promise<void> {
  if (!members.length) return;
  await db('memberships').insert(members.map((m) => ({ org_id: orgId, user_id: m.userId, role: m.role, created_at: t.ctx.now() })));
  await db('organisations').where({ id: orgId }).increment('member_count', members.length);
}

/**
 * An open invitation with a token the test knows (tokens are otherwise only mailed), addressed to
 * `email`; stored as the service stores it (lower-cased email, SHA-256 of the token, 7 days).
 */
export async function insertInvitation(t: TestApp, db: Knex, orgId: string, invitedBy: string, email: string, role: 'admin' | 'member' = 'member') {
  const id = newId('inv');
  const token = newSessionToken();
  const now = t.ctx.now();
  await db('invitations').insert({
    id,
    org_id: orgId,
    email: email.toLowerCase(),
    role,
    token_hash: hashToken(token),
    invited_by: invitedBy,
    created_at: now,
    expires_at: new Date(now.getTime() + 7 * 24 * 3600 * 1000),
  });
  return { id, token, email: email.toLowerCase() };
}

export interface OrgFixture {
  orgId: string;
  name: string;
  slug: string;
  projectId: string;
  projectName: string;
  /** An open invitation made through the API. */
  invitationId: string;
  invitationEmail: string;
}

/**
 * An organisation founded by `owner` through the API, with `members` added directly, one project
 * and one open invitation (both made by the owner through the API).
 */
export async function buildOrg(t: TestApp, db: Knex, spec: { owner: User; name: string; members?: { user: User; role: Role }[] }): Promise<OrgFixture> {
  const as = spec.owner;
  const org = await createOrg(t, as, { name: spec.name });
  await addMembers(t, db, org.id, (spec.members ?? []).map((m) => ({ userId: m.user.userId, role: m.role })));
  const unique = tag();
  const projectName = `${spec.name} project ${unique}`;
  const invitationEmail = `invitee-${unique}@example.com`;
  const [project, invitation] = await Promise.all([
    createProject(t, as, org.id, { name: projectName }),
    createInvitation(t, as, org.id, { email: invitationEmail, role: 'member' }),
  ]);
  return { orgId: org.id, name: org.name, slug: org.slug, projectId: project.id, projectName, invitationId: invitation.id, invitationEmail };
}

/** Soft-deletes the organisation through the API, as its owner. */
export async function softDeleteOrg(t: TestApp, owner: User, orgId: string): Promise<void> {
  await deleteOrg(t, owner, orgId);
}

// ---------------------------------------------------------------------------------------------
// Assertions

/** The response's status and Problem code together, so a failure shows both. */
export const outcome = (res: Response) => ({ status: res.status, code: (res.body as { code?: string } | undefined)?.code });

/** Which of `secrets` appear (case-insensitively) in the response's body or headers: expected none. */
export function leakedSecrets(res: Response, secrets: string[]): string[] {
  const text = `${res.text ?? ''}\n${JSON.stringify(res.headers)}`.toLowerCase();
  return secrets.filter((s) => text.includes(s.toLowerCase()));
}
