// The bare SQL baseline of the organisations benchmark: a node:http server (no framework, no
// validation, no query builder) answering the same four GETs with the same SQL the service sends,
// on node-pg with the same pool size, connected as the same application role (row-level security
// applies), in the same round trips:
//
//   1. the session lookup (the same named prepared statement as src/sessions/store.ts);
//   2. BEGIN; set_config(app.user_id, app.org_id, app.invitation_id) (src/platform/tenant-context.ts);
//   3. under /v1/orgs/{orgId}: the membership lookup (src/orgs/store.ts findMembership);
//   4. the list (src/projects/store.ts list / src/orgs/store.ts listForUser), with limit 51;
//   5. COMMIT;
//
// and the same JSON bodies. The statement texts are what knex generates for those calls.
//
// Environment: PORT, BARE_DATABASE_URL, BARE_POOL_MAX (10). Prints "listening <port>" when ready.
import http from 'node:http';
import pg from 'pg';
import { hashToken, looksLikeToken } from '../../src/sessions/tokens';
import { ENTER_ORG, FIND_LIVE_SESSION, LIST_ORGS, LIST_PROJECTS_AS_MEMBER, SET_CONTEXT } from './sql';

const LIMIT = 50;
const IDLE_TIMEOUT_MS = 14 * 24 * 3600 * 1000; // SESSION_IDLE_TIMEOUT_SECONDS default
const TOUCH_EVERY_MS = 60_000;

const pool = new pg.Pool({ connectionString: process.env.BARE_DATABASE_URL, max: Number(process.env.BARE_POOL_MAX ?? 10), idleTimeoutMillis: 30_000 });

const iso = (d: Date) => d.toISOString();
const orgBody = (r: any) => ({
  id: r.id,
  name: r.name,
  slug: r.slug,
  role: r.role,
  member_count: r.member_count,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
  deleted_at: r.deleted_at ? iso(r.deleted_at) : null,
});
const projectBody = (r: any) => ({
  id: r.id,
  org_id: r.org_id,
  name: r.name,
  description: r.description,
  created_by: r.created_by,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});
const listBody = (rows: any[], toBody: (r: any) => unknown) => {
  const items = rows.slice(0, LIMIT);
  const next = rows.length > LIMIT ? Buffer.from(JSON.stringify({ id: items[items.length - 1].id })).toString('base64url') : null;
  return { items: items.map(toBody), next_cursor: next };
};

async function userOf(req: http.IncomingMessage): Promise<string | null> {
  const header = req.headers.authorization;
  const token = header?.startsWith('Bearer ') ? header.slice(7).trim() : '';
  if (!looksLikeToken(token)) return null;
  const now = Date.now();
  const { rows } = await pool.query({
    ...FIND_LIVE_SESSION,
    values: [hashToken(token), new Date(now), new Date(now - IDLE_TIMEOUT_MS), new Date(now - TOUCH_EVERY_MS)],
  });
  return rows[0] && rows[0].transport === 'bearer' ? (rows[0].id as string) : null;
}

/** One transaction as `userId`, like Services.actingAs (a set_config statement after BEGIN). */
async function actingAs<T>(userId: string, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN;');
    await client.query(SET_CONTEXT, [userId, '', '']);
    const result = await fn(client);
    await client.query('COMMIT;');
    return result;
  } catch (err) {
    await client.query('ROLLBACK;').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}


type Answer = [number, unknown];

async function route(req: http.IncomingMessage): Promise<Answer> {
  if (req.method !== 'GET') return [405, { code: 'method_not_allowed' }];
  const url = new URL(req.url ?? '/', 'http://bare');
  if (url.pathname === '/v1/ping') return [200, { pong: true }];
  const parts = url.pathname.split('/'); // ['', 'v1', 'orgs', orgId?, 'projects'?]
  if (parts[1] !== 'v1' || parts[2] !== 'orgs' || parts.length > 5) return [404, { code: 'not_found' }];
  const userId = await userOf(req);
  if (!userId) return [401, { code: 'unauthenticated' }];
  const orgId = parts[3];
  if (orgId === undefined) {
    // GET /v1/orgs
    const rows = await actingAs(userId, async (c) => (await c.query({ name: 'orgs.member_organisations', text: LIST_ORGS, values: [userId, null, null, LIMIT + 1] })).rows);
    return [200, listBody(rows, orgBody)];
  }
  if (parts.length === 4) {
    // GET /v1/orgs/{orgId}: one statement, no explicit transaction (as OrgService.get)
    const found = (await pool.query({ ...ENTER_ORG, values: [userId, orgId, false] })).rows[0];
    return found && !found.deleted_at ? [200, orgBody(found)] : [404, { code: 'not_found' }];
  }
  if (parts[4] !== 'projects') return [404, { code: 'not_found' }];
  // GET /v1/orgs/{orgId}/projects[?cursor=]: one statement, no explicit transaction (as ProjectService.list)
  const cursor = url.searchParams.get('cursor');
  const before = cursor ? (JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')).id as string) : null;
  const rows = (await pool.query({ ...LIST_PROJECTS_AS_MEMBER, values: [userId, orgId, before, LIMIT + 1] })).rows;
  if (!rows.length || rows[0].org_deleted_at) return [404, { code: 'not_found' }];
  return [200, listBody(rows.filter((r) => r.id !== null), projectBody)];
}

const server = http.createServer((req, res) => {
  route(req).then(
    ([status, body]) => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
    },
    (err) => {
      console.error(err);
      res.writeHead(500).end();
    },
  );
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  console.log(`listening ${typeof address === 'object' && address ? address.port : ''}`);
});
process.on('SIGTERM', () => server.close(() => pool.end().finally(() => process.exit(0))));
