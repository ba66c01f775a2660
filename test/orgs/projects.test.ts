// Projects through HTTP: create, list newest first with cursors, get, update, delete; names unique
// per organisation (case-insensitive, trimmed); members create and update, owners and admins delete.
import { startTestApp, type TestApp } from '../support/test-app';
import type { Db } from '../../src/platform/database';
import { addMember, orgWith, ownerDatabase } from '../support/orgs';

let t: TestApp;
let owner: Db;
beforeAll(async () => {
  t = await startTestApp();
  owner = ownerDatabase(t);
});
afterAll(async () => {
  await owner.destroy();
  await t.close();
});

it('members create, read, update; names are unique per organisation; audited with org_id', async () => {
  const { org, user } = await orgWith(t, owner, 'member', { name: 'Projects Inc' });
  const base = `/v1/orgs/${org.id}/projects`;
  const res = await t.http.post(base).set('Authorization', user.auth).send({ name: '  Website  ', description: 'Spring launch' }).expect(201);
  const project = res.body;
  expect(res.headers.location).toBe(`${base}/${project.id}`);
  expect(project).toMatchObject({ org_id: org.id, name: 'Website', description: 'Spring launch', created_by: user.userId });
  expect((await t.http.post(base).set('Authorization', user.auth).send({ name: 'WEBSITE' }).expect(409)).body.code).toBe('project_name_taken');

  expect((await t.http.get(`${base}/${project.id}`).set('Authorization', user.auth).expect(200)).body).toEqual(project);
  const other = (await t.http.post(base).set('Authorization', user.auth).send({ name: 'Other' }).expect(201)).body;
  expect((await t.http.patch(`${base}/${other.id}`).set('Authorization', user.auth).send({ name: 'website' }).expect(409)).body.code).toBe('project_name_taken');
  const updated = (await t.http.patch(`${base}/${project.id}`).set('Authorization', user.auth).send({ name: 'Website 2', description: null }).expect(200)).body;
  expect(updated).toMatchObject({ name: 'Website 2', description: null });
  await t.http.patch(`${base}/${project.id}`).set('Authorization', user.auth).send({ name: 'Website 2' }).expect(200); // no change, no event

  const events = await owner('audit_events').where({ org_id: org.id }).whereLike('action', 'project.%').orderBy('id');
  expect(events.map((e: any) => [e.action, e.data])).toEqual([
    ['project.created', { name: 'Website' }],
    ['project.created', { name: 'Other' }],
    ['project.updated', { fields: ['name', 'description'] }],
  ]);
  expect((await t.http.post(base).set('Authorization', user.auth).send({ name: 'x', extra: 1 }).expect(422)).body.errors[0].location).toBe('body.extra');
  expect((await t.http.post(base).set('Authorization', user.auth).send({ name: 'x', description: 'd'.repeat(2001) }).expect(422)).body.errors[0].location).toBe('body.description');
});

it('lists newest first with cursors', async () => {
  const { org, user } = await orgWith(t, owner, 'member', { name: 'Projects Inc' });
  const base = `/v1/orgs/${org.id}/projects`;
  const made = [];
  for (let i = 0; i < 5; i++) made.push((await t.http.post(base).set('Authorization', user.auth).send({ name: `P${i}` }).expect(201)).body.id);
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const res: any = await t.http.get(`${base}?limit=2${cursor ? `&cursor=${cursor}` : ''}`).set('Authorization', user.auth).expect(200);
    seen.push(...res.body.items.map((p: { id: string }) => p.id));
    cursor = res.body.next_cursor;
  } while (cursor);
  expect(seen).toEqual(made.reverse());
});

it('members may not delete; admins may; a deleted project is gone and its name free', async () => {
  const { org, user, founder } = await orgWith(t, owner, 'admin', { name: 'Projects Inc' });
  const base = `/v1/orgs/${org.id}/projects`;
  const member = await addMember(t, owner, org.id, 'member');
  const project = (await t.http.post(base).set('Authorization', founder.auth).send({ name: 'Doomed' }).expect(201)).body;
  expect((await t.http.delete(`${base}/${project.id}`).set('Authorization', member.auth).expect(403)).body.code).toBe('forbidden');
  await t.http.delete(`${base}/${project.id}`).set('Authorization', user.auth).expect(204);
  await t.http.get(`${base}/${project.id}`).set('Authorization', user.auth).expect(404);
  await t.http.delete(`${base}/${project.id}`).set('Authorization', user.auth).expect(404);
  await t.http.post(base).set('Authorization', founder.auth).send({ name: 'doomed' }).expect(201);
  expect(await owner('audit_events').where({ action: 'project.deleted', target_id: project.id }).first()).toMatchObject({ actor_id: user.userId, data: { name: 'Doomed' } });
});
