// Organisations and members through HTTP: creation (verified email, slugs), lists with cursors,
// rename, soft delete and restore within 30 days, leaving, role changes and removals with the
// last-owner rule, and the audit event of every change.
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import type { Db } from '../../src/platform/database';
import { addMember, createOrg, ownerDatabase } from '../support/orgs';
import { createSession } from '../../src/sessions/store';

let t: TestApp;
let owner: Db; // bypasses row-level security: fixtures and checks only
beforeAll(async () => {
  t = await startTestApp();
  owner = ownerDatabase(t);
});
afterAll(async () => {
  await owner.destroy();
  await t.close();
});

const DAY = 24 * 3600 * 1000;


const audit = (action: string, orgId: string) => owner('audit_events').where({ action, org_id: orgId }).orderBy('id');

describe('create', () => {
  it('makes the caller owner, derives a unique slug, answers 201 with Location, audits org.created', async () => {
    const u = await signedInUser(t.ctx, { verified: true });
    const name = `Café Ünïcode ${Date.now()}`;
    const res = await t.http.post('/v1/orgs').set('Authorization', u.auth).send({ name: `  ${name}  ` }).expect(201);
    expect(res.headers.location).toBe(`/v1/orgs/${res.body.id}`);
    expect(res.body).toMatchObject({ name, role: 'owner', member_count: 1, deleted_at: null });
    expect(res.body.slug).toBe(name.toLowerCase().replace('é', 'e').replace('ü', 'u').replace('ï', 'i').replace(/ /g, '-'));
    const again = await createOrg(t, u, { name });
    expect(again.slug).toBe(`${res.body.slug}-2`);
    const third = await createOrg(t, u, { name });
    expect(third.slug).toBe(`${res.body.slug}-3`);
    expect((await createOrg(t, u, { name: '!!' })).slug).toMatch(/^org-[a-z0-9]{6}$/);
    expect(await audit('org.created', res.body.id)).toEqual([expect.objectContaining({ actor_id: u.userId, target_id: res.body.id })]);
  });

  it('403 email_not_verified for an unverified caller; 409 slug_taken for a used slug; 422 naming the field', async () => {
    const unverified = await signedInUser(t.ctx);
    expect((await t.http.post('/v1/orgs').set('Authorization', unverified.auth).send({ name: 'X' }).expect(403)).body.code).toBe('email_not_verified');
    const u = await signedInUser(t.ctx, { verified: true });
    const slug = `taken-${Date.now()}`;
    await createOrg(t, u, { name: 'First', slug });
    const other = await signedInUser(t.ctx, { verified: true });
    expect((await t.http.post('/v1/orgs').set('Authorization', other.auth).send({ name: 'Second', slug }).expect(409)).body.code).toBe('slug_taken');
    const bad = await t.http.post('/v1/orgs').set('Authorization', u.auth).send({ name: 'X', slug: 'Not A Slug' }).expect(422);
    expect(bad.body.errors[0].location).toBe('body.slug');
    const blank = await t.http.post('/v1/orgs').set('Authorization', u.auth).send({ name: '   ' }).expect(422);
    expect(blank.body.errors[0].location).toBe('body.name');
    await t.http.post('/v1/orgs').send({ name: 'X' }).expect(401);
  });
});

describe('list and get', () => {
  it('lists only the caller’s organisations, newest first, with cursors; deleted ones only with include_deleted', async () => {
    const u = await signedInUser(t.ctx, { verified: true });
    const orgs = [];
    for (let i = 0; i < 5; i++) orgs.push(await createOrg(t, u, { name: `List ${i}` }));
    const someoneElse = await signedInUser(t.ctx, { verified: true });
    await createOrg(t, someoneElse, { name: 'Not mine' });

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: any = await t.http.get(`/v1/orgs?limit=2${cursor ? `&cursor=${cursor}` : ''}`).set('Authorization', u.auth).expect(200);
      seen.push(...res.body.items.map((o: { id: string }) => o.id));
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(orgs.map((o) => o.id).reverse());

    await t.http.delete(`/v1/orgs/${orgs[4]!.id}`).set('Authorization', u.auth).expect(200);
    const live = (await t.http.get('/v1/orgs').set('Authorization', u.auth).expect(200)).body.items;
    expect(live.map((o: { id: string }) => o.id)).not.toContain(orgs[4]!.id);
    const all = (await t.http.get('/v1/orgs?include_deleted=true').set('Authorization', u.auth).expect(200)).body.items;
    expect(all[0]).toMatchObject({ id: orgs[4]!.id, deleted_at: expect.any(String) });
    expect((await t.http.get('/v1/orgs?cursor=garbage').set('Authorization', u.auth).expect(422)).body.errors[0].location).toBe('query.cursor');
  });

  it('GET answers members with their role; non-members and unknown ids alike get the same 404', async () => {
    const u = await signedInUser(t.ctx, { verified: true });
    const org = await createOrg(t, u);
    const m = await addMember(t, owner, org.id, 'member');
    expect((await t.http.get(`/v1/orgs/${org.id}`).set('Authorization', m.auth).expect(200)).body).toMatchObject({ role: 'member', member_count: 2 });
    const outsider = await signedInUser(t.ctx, { verified: true });
    const a = await t.http.get(`/v1/orgs/${org.id}`).set('Authorization', outsider.auth).expect(404);
    const b = await t.http.get('/v1/orgs/org_00000000000000000000000000').set('Authorization', outsider.auth).expect(404);
    const strip = (body: any) => ({ ...body, request_id: undefined });
    expect(strip(a.body)).toEqual(strip(b.body));
  });
});

describe('rename', () => {
  it('owners and admins rename (org.renamed with old and new values, only on change); members 403; slug clash 409', async () => {
    const u = await signedInUser(t.ctx, { verified: true });
    const org = await createOrg(t, u, { name: 'Old Name' });
    const admin = await addMember(t, owner, org.id, 'admin');
    const member = await addMember(t, owner, org.id, 'member');
    const slug = `renamed-${Date.now()}`;
    const res = await t.http.patch(`/v1/orgs/${org.id}`).set('Authorization', admin.auth).send({ name: 'New Name', slug }).expect(200);
    expect(res.body).toMatchObject({ name: 'New Name', slug, role: 'admin' });
    await t.http.patch(`/v1/orgs/${org.id}`).set('Authorization', u.auth).send({ name: 'New Name' }).expect(200);
    expect(await audit('org.renamed', org.id)).toEqual([
      expect.objectContaining({ actor_id: admin.userId, data: { old_name: 'Old Name', new_name: 'New Name', old_slug: org.slug, new_slug: slug } }),
    ]);
    expect((await t.http.patch(`/v1/orgs/${org.id}`).set('Authorization', member.auth).send({ name: 'Nope' }).expect(403)).body.code).toBe('forbidden');
    const other = await createOrg(t, u, { name: 'Other' });
    expect((await t.http.patch(`/v1/orgs/${other.id}`).set('Authorization', u.auth).send({ slug }).expect(409)).body.code).toBe('slug_taken');
    // The old slug was released at once.
    await t.http.patch(`/v1/orgs/${other.id}`).set('Authorization', u.auth).send({ slug: org.slug }).expect(200);
    expect((await t.http.patch(`/v1/orgs/${org.id}`).set('Authorization', u.auth).send({}).expect(422)).body.code).toBe('validation_failed');
  });
});

describe('delete and restore', () => {
  it('owners soft-delete; everything under it answers 404 except GET and restore for owners within 30 days', async () => {
    const u = await signedInUser(t.ctx, { verified: true });
    const org = await createOrg(t, u);
    const admin = await addMember(t, owner, org.id, 'admin');
    const project = (await t.http.post(`/v1/orgs/${org.id}/projects`).set('Authorization', u.auth).send({ name: 'P' }).expect(201)).body;
    expect((await t.http.delete(`/v1/orgs/${org.id}`).set('Authorization', admin.auth).expect(403)).body.code).toBe('forbidden');
    expect((await t.http.post(`/v1/orgs/${org.id}/restore`).set('Authorization', u.auth).expect(409)).body.code).toBe('not_deleted');

    const deleted = (await t.http.delete(`/v1/orgs/${org.id}`).set('Authorization', u.auth).expect(200)).body;
    expect(deleted.deleted_at).not.toBeNull();
    await t.http.delete(`/v1/orgs/${org.id}`).set('Authorization', u.auth).expect(404);
    await t.http.get(`/v1/orgs/${org.id}/projects/${project.id}`).set('Authorization', u.auth).expect(404);
    await t.http.get(`/v1/orgs/${org.id}/members`).set('Authorization', u.auth).expect(404);
    await t.http.get(`/v1/orgs/${org.id}`).set('Authorization', admin.auth).expect(404);
    await t.http.post(`/v1/orgs/${org.id}/restore`).set('Authorization', admin.auth).expect(404);
    expect((await t.http.get(`/v1/orgs/${org.id}`).set('Authorization', u.auth).expect(200)).body.deleted_at).toBe(deleted.deleted_at);

    const restored = (await t.http.post(`/v1/orgs/${org.id}/restore`).set('Authorization', u.auth).expect(200)).body;
    expect(restored.deleted_at).toBeNull();
    await t.http.get(`/v1/orgs/${org.id}/projects/${project.id}`).set('Authorization', admin.auth).expect(200);
    expect((await audit('org.deleted', org.id)).length).toBe(1);
    expect((await audit('org.restored', org.id)).length).toBe(1);
  });

  it('after 30 days a deleted organisation is gone for everyone, and retention purges it with its rows in batches', async () => {
    const u = await signedInUser(t.ctx, { verified: true });
    const org = await createOrg(t, u);
    await addMember(t, owner, org.id, 'member');
    for (let i = 0; i < 5; i++) await t.http.post(`/v1/orgs/${org.id}/projects`).set('Authorization', u.auth).send({ name: `P${i}` }).expect(201);
    await t.http.post(`/v1/orgs/${org.id}/invitations`).set('Authorization', u.auth).send({ email: 'later@example.com', role: 'member' }).expect(201);
    const keep = await createOrg(t, u, { name: 'Keep me' });
    await t.http.post(`/v1/orgs/${keep.id}/projects`).set('Authorization', u.auth).send({ name: 'Kept' }).expect(201);
    await t.http.delete(`/v1/orgs/${org.id}`).set('Authorization', u.auth).expect(200);

    t.clock.advance(30 * DAY + 1000);
    try {
      // (The old session has idled out by now: a new sign-in.)
      const session = await createSession(t.ctx.db, { userId: u.userId, transport: 'bearer' }, t.ctx.config.session, t.ctx.now());
      const auth = `Bearer ${session.token}`;
      await t.http.get(`/v1/orgs/${org.id}`).set('Authorization', auth).expect(404);
      await t.http.post(`/v1/orgs/${org.id}/restore`).set('Authorization', auth).expect(404);
      expect((await t.http.get('/v1/orgs?include_deleted=true').set('Authorization', auth).expect(200)).body.items.map((o: { id: string }) => o.id)).toEqual([keep.id]);
      const removed = await t.ctx.services.orgs.purgeDeleted(new Date(t.clock.now.getTime() - 30 * DAY), 2);
      // This one's projects, invitation, memberships and row (and those of organisations other tests deleted).
      expect(removed).toBeGreaterThanOrEqual(5 + 1 + 2 + 1);
    } finally {
      t.clock.advance(-(30 * DAY + 1000));
    }
    for (const table of ['organisations', 'memberships', 'invitations', 'projects']) {
      expect(await owner(table).where(table === 'organisations' ? { id: org.id } : { org_id: org.id }).count({ n: '*' })).toEqual([{ n: 0 }]);
    }
    expect(await owner('projects').where({ org_id: keep.id }).count({ n: '*' })).toEqual([{ n: 1 }]);
  });
});

describe('members', () => {
  it('lists members oldest first with cursors (any member may read)', async () => {
    const u = await signedInUser(t.ctx, { verified: true });
    const org = await createOrg(t, u);
    const added = [];
    for (let i = 0; i < 4; i++) added.push(await addMember(t, owner, org.id, 'member'));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: any = await t.http.get(`/v1/orgs/${org.id}/members?limit=2${cursor ? `&cursor=${cursor}` : ''}`).set('Authorization', added[0]!.auth).expect(200);
      seen.push(...res.body.items.map((m: { user_id: string }) => m.user_id));
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual([u.userId, ...added.map((a) => a.userId)]);
  });

  it('the last owner cannot leave, be demoted or removed; ownership can be handed over', async () => {
    const u = await signedInUser(t.ctx, { verified: true });
    const org = await createOrg(t, u);
    const m = await addMember(t, owner, org.id, 'member');
    expect((await t.http.post(`/v1/orgs/${org.id}/leave`).set('Authorization', u.auth).expect(409)).body.code).toBe('last_owner');
    expect((await t.http.patch(`/v1/orgs/${org.id}/members/${u.userId}`).set('Authorization', u.auth).send({ role: 'admin' }).expect(409)).body.code).toBe('last_owner');
    expect((await t.http.delete(`/v1/orgs/${org.id}/members/${u.userId}`).set('Authorization', u.auth).expect(409)).body.code).toBe('last_owner');

    // Hand over: promote, then step down.
    expect((await t.http.patch(`/v1/orgs/${org.id}/members/${m.userId}`).set('Authorization', u.auth).send({ role: 'owner' }).expect(200)).body.role).toBe('owner');
    await t.http.patch(`/v1/orgs/${org.id}/members/${u.userId}`).set('Authorization', u.auth).send({ role: 'member' }).expect(200);
    expect((await audit('org.member.role_changed', org.id)).map((e: any) => e.data)).toEqual([
      { old_role: 'member', new_role: 'owner' },
      { old_role: 'owner', new_role: 'member' },
    ]);
    await t.http.post(`/v1/orgs/${org.id}/leave`).set('Authorization', u.auth).expect(204);
    await t.http.get(`/v1/orgs/${org.id}`).set('Authorization', u.auth).expect(404);
    expect((await t.http.get(`/v1/orgs/${org.id}`).set('Authorization', m.auth).expect(200)).body.member_count).toBe(1);
    expect((await audit('org.member.left', org.id)).length).toBe(1);
  });

  it('admins re-role and remove non-owners only; members neither; unknown users 404', async () => {
    const u = await signedInUser(t.ctx, { verified: true });
    const org = await createOrg(t, u);
    const admin = await addMember(t, owner, org.id, 'admin');
    const m1 = await addMember(t, owner, org.id, 'member');
    const m2 = await addMember(t, owner, org.id, 'member');
    await t.http.patch(`/v1/orgs/${org.id}/members/${m1.userId}`).set('Authorization', admin.auth).send({ role: 'admin' }).expect(200);
    expect((await t.http.patch(`/v1/orgs/${org.id}/members/${m2.userId}`).set('Authorization', admin.auth).send({ role: 'owner' }).expect(403)).body.code).toBe('forbidden');
    expect((await t.http.patch(`/v1/orgs/${org.id}/members/${u.userId}`).set('Authorization', admin.auth).send({ role: 'member' }).expect(403)).body.code).toBe('forbidden');
    expect((await t.http.delete(`/v1/orgs/${org.id}/members/${u.userId}`).set('Authorization', admin.auth).expect(403)).body.code).toBe('forbidden');
    expect((await t.http.delete(`/v1/orgs/${org.id}/members/${m1.userId}`).set('Authorization', m2.auth).expect(403)).body.code).toBe('forbidden');
    await t.http.delete(`/v1/orgs/${org.id}/members/${m2.userId}`).set('Authorization', admin.auth).expect(204);
    expect((await audit('org.member.removed', org.id))[0]).toMatchObject({ actor_id: admin.userId, target_id: m2.userId });
    await t.http.delete(`/v1/orgs/${org.id}/members/${m2.userId}`).set('Authorization', admin.auth).expect(404);
    const stranger = await signedInUser(t.ctx, { verified: true });
    await t.http.patch(`/v1/orgs/${org.id}/members/${stranger.userId}`).set('Authorization', u.auth).send({ role: 'admin' }).expect(404);
    // An admin may step down themselves.
    await t.http.patch(`/v1/orgs/${org.id}/members/${admin.userId}`).set('Authorization', admin.auth).send({ role: 'member' }).expect(200);
    expect((await t.http.get(`/v1/orgs/${org.id}`).set('Authorization', u.auth).expect(200)).body.member_count).toBe(3);
  });
});

describe('account deletion', () => {
  it('409 last_owner while the only owner of an organisation with other members; otherwise memberships go and orphaned organisations are soft-deleted', async () => {
    const u = await signedInUser(t.ctx, { verified: true });
    const shared = await createOrg(t, u, { name: 'Shared' });
    const solo = await createOrg(t, u, { name: 'Solo' });
    const m = await addMember(t, owner, shared.id, 'member');
    const elsewhere = await createOrg(t, m, { name: 'Theirs' });
    await owner('memberships').insert({ org_id: elsewhere.id, user_id: u.userId, role: 'admin', created_at: new Date() });
    await owner('organisations').where({ id: elsewhere.id }).increment('member_count', 1);
    await owner('users').where({ id: u.userId }).update({ password_hash: null });

    const refuse = await t.ctx.services.accounts.deleteAccount({ userId: u.userId, proofMethod: 'password' }, { requestId: 'req_test', ip: null, userAgent: null }).catch((e) => e);
    expect(refuse.code).toBe('last_owner');

    await t.http.patch(`/v1/orgs/${shared.id}/members/${m.userId}`).set('Authorization', u.auth).send({ role: 'owner' }).expect(200);
    await t.ctx.services.accounts.deleteAccount({ userId: u.userId, proofMethod: 'password' }, { requestId: 'req_test', ip: null, userAgent: null });
    expect(await owner('memberships').where({ user_id: u.userId })).toEqual([]);
    expect((await t.http.get(`/v1/orgs/${shared.id}`).set('Authorization', m.auth).expect(200)).body.member_count).toBe(1);
    expect((await t.http.get(`/v1/orgs/${elsewhere.id}`).set('Authorization', m.auth).expect(200)).body.member_count).toBe(1);
    expect((await owner('organisations').where({ id: solo.id }).first()).deleted_at).not.toBeNull();
    expect((await audit('org.member.left', solo.id))[0].data).toMatchObject({ reason: 'account_deleted', org_deleted: true });
  });
});
