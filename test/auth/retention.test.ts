// The retention job's pruning outside job runs: sessions that expired or were revoked over a week
// ago, one-time codes, sign-in challenges and passkey ceremonies expired over a day ago, mail
// records older than 30 days; live ones stay.
import { startTestApp, type TestApp } from '../support/test-app';
import { signedInUser } from '../support/users';
import { waitFor } from '../support/wait';

const DAY_MS = 24 * 3600 * 1000;
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({}, { workers: true });
});
afterAll(() => t?.close());

it('prunes dead sessions, dead codes and old mail records, and keeps the live ones', async () => {
  const now = t.clock.now.getTime();
  const ago = (days: number) => new Date(now - days * DAY_MS);
  const u = await signedInUser(t.ctx);
  const operator = await signedInUser(t.ctx, { operator: true });
  const session = (fields: Record<string, unknown>) => t.ctx.db('sessions').insert({ id: `ses_${Math.random().toString(36).slice(2, 28).padEnd(26, '0')}`, user_id: u.userId, token_hash: Buffer.from(String(Math.random())), transport: 'bearer', ...fields }).returning('id');
  const [expired] = await session({ created_at: ago(100), last_seen_at: ago(20), expires_at: ago(10) });
  const [revoked] = await session({ created_at: ago(20), last_seen_at: ago(9), expires_at: ago(-70), revoked_at: ago(8) });
  const [recentlyRevoked] = await session({ created_at: ago(5), last_seen_at: ago(2), expires_at: ago(-80), revoked_at: ago(2) });
  const code = (expiresDaysAgo: number, used: boolean) =>
    t.ctx.db('one_time_codes').insert({ user_id: u.userId, purpose: 'verify_email', code_hash: Buffer.alloc(32), created_at: ago(expiresDaysAgo + 0.01), expires_at: ago(expiresDaysAgo), used_at: used ? ago(expiresDaysAgo + 0.005) : null }).returning('id');
  const [deadCode] = await code(2, false);
  const [usedCode] = await code(3, true);
  const [freshCode] = await code(-0.01, false);
  const mail = (daysAgo: number) => t.ctx.db('mail_messages').insert({ to: 'a@example.com', subject: 's', text: 't', html: 'h', transport: 'log', sent_at: ago(daysAgo) }).returning('id');
  const [oldMail] = await mail(31);
  const [newMail] = await mail(29);
  // Sign-in challenges and passkey ceremonies go a day after they expire (used or not).
  const challenge = (expiresDaysAgo: number) =>
    t.ctx.db('mfa_challenges').insert({ id: `chl_${Math.random()}`, token_hash: Buffer.from(String(Math.random())), user_id: u.userId, first_factor: 'password', transport: 'bearer', created_at: ago(expiresDaysAgo + 0.01), expires_at: ago(expiresDaysAgo) }).returning('id');
  const [oldChallenge] = await challenge(1.5);
  const [recentChallenge] = await challenge(0.5);
  const ceremony = (expiresDaysAgo: number) =>
    t.ctx.db('webauthn_ceremonies').insert({ token_hash: Buffer.from(String(Math.random())), purpose: 'login', challenge: 'c', created_at: ago(expiresDaysAgo + 0.01), expires_at: ago(expiresDaysAgo) }).returning('id');
  const [oldCeremony] = await ceremony(1.5);
  const [recentCeremony] = await ceremony(0.5);

  const res = await t.http.post('/ops/jobs/definitions/service.retention.enforce/run').set('Authorization', operator.auth).expect(202);
  await waitFor('the retention run to complete', async () => (await t.ctx.db('job_runs').where({ id: res.body.id }).first())?.state === 'completed');

  const ids = async (table: string, rows: { id: string | number }[]) => (await t.ctx.db(table).whereIn('id', rows.map((r) => r.id)).select('id')).map((r: any) => String(r.id)).sort();
  expect(await ids('sessions', [expired!, revoked!, recentlyRevoked!, { id: u.sessionId }])).toEqual([recentlyRevoked!.id, u.sessionId].sort());
  expect(await ids('one_time_codes', [deadCode!, usedCode!, freshCode!])).toEqual([String(freshCode!.id)]);
  expect(await ids('mail_messages', [oldMail!, newMail!])).toEqual([String(newMail!.id)]);
  expect(await ids('mfa_challenges', [oldChallenge!, recentChallenge!])).toEqual([recentChallenge!.id]);
  expect(await ids('webauthn_ceremonies', [oldCeremony!, recentCeremony!])).toEqual([String(recentCeremony!.id)]);
});

it('prunes a session that stopped working by idle timeout once that is `keep` ago, with its ip and user agent; a recent one stays', async () => {
  const now = t.clock.now.getTime();
  const ago = (days: number) => new Date(now - days * DAY_MS);
  const operator = await signedInUser(t.ctx, { operator: true });
  // The idle timeout is 14 days and `keep` 7: idle for 30 days ended 16 days ago, idle for 20 days 6 days ago.
  const longIdle = await signedInUser(t.ctx);
  const recentlyIdle = await signedInUser(t.ctx);
  await t.ctx.db('sessions').where({ id: longIdle.sessionId }).update({ last_seen_at: ago(30), ip: '203.0.113.7', user_agent: 'idle browser' });
  await t.ctx.db('sessions').where({ id: recentlyIdle.sessionId }).update({ last_seen_at: ago(20) });
  // Neither works any more, though both are far from their absolute expiry.
  for (const s of [longIdle, recentlyIdle]) expect((await t.http.get('/v1/auth/me').set('Authorization', s.auth).expect(401)).body.code).toBe('unauthenticated');

  const res = await t.http.post('/ops/jobs/definitions/service.retention.enforce/run').set('Authorization', operator.auth).expect(202);
  await waitFor('the retention run to complete', async () => (await t.ctx.db('job_runs').where({ id: res.body.id }).first())?.state === 'completed');

  expect(await t.ctx.db('sessions').where({ id: longIdle.sessionId }).first()).toBeUndefined();
  expect(await t.ctx.db('sessions').where({ id: recentlyIdle.sessionId }).first()).toBeDefined();
  expect(await t.ctx.db('sessions').where({ id: operator.sessionId }).first()).toBeDefined();
});
