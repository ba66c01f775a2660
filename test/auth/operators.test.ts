// OPERATOR_EMAILS grants the platform role `operator` only to an account whose email is verified,
// and the moment a listed address is verified (code, password reset, a provider-verified social
// sign-up) — never to whoever registered the address first. Through HTTP, with codes read from
// the mail a real SMTP server received. Start and restart, the commands and disabled accounts:
// test/system/operators.test.ts.
import type { TestApp } from '../support/test-app';
import { startTestApp } from '../support/test-app';
import { codeIn, TestSmtpServer } from '../support/smtp';
import { browserFlow, liveCookies, startSocialPeers, uniqueSub, type SocialPeers } from '../support/social';
import { signUp } from '../support/accounts';
const LISTED = ['first@ops.example.com', 'reset@ops.example.com', 'social-unverified@ops.example.com', 'social@ops.example.com'];

let t: TestApp;
let smtp: TestSmtpServer;
let peers: SocialPeers;
beforeAll(async () => {
  smtp = await TestSmtpServer.start();
  peers = await startSocialPeers();
  // Upper case and spaces in the setting: addresses compare normalised.
  t = await startTestApp({ ...peers.env, SMTP_URL: smtp.url, OPERATOR_EMAILS: LISTED.map((e) => ` ${e.toUpperCase()}`).join(',') }, { workers: true });
});
afterAll(async () => {
  await t?.close();
  await Promise.all([smtp?.stop(), peers?.close()]);
});

const me = (auth: string) => t.http.get('/v1/auth/me').set('Authorization', auth).expect(200);
const grants = (userId: string) => t.ctx.db('audit_events').where({ action: 'ops.operator.granted', target_id: userId });

async function mailedCode(email: string, subject: string): Promise<string> {
  return codeIn(await smtp.waitForMessage((m) => m.to.includes(email) && m.subject === subject));
}

it('a listed address registered by anyone is not an operator until its mailbox is proved; verifying grants it at once, audited', async () => {
  const u = await signUp(t, { email: 'First@ops.example.com' });
  expect(u.user).toMatchObject({ email: 'first@ops.example.com', email_verified: false, operator: false });
  expect((await me(u.auth)).body.operator).toBe(false);
  await t.http.get('/ops/audit').set('Authorization', u.auth).expect(403);
  expect(await grants(u.userId)).toHaveLength(0);

  const code = await mailedCode('first@ops.example.com', 'Confirm your email address');
  const verified = await t.http.post('/v1/auth/verify-email').set('Authorization', u.auth).send({ code }).expect(200);
  expect(verified.body).toMatchObject({ email_verified: true, operator: true });
  expect((await me(u.auth)).body.operator).toBe(true);
  await t.http.get('/ops/audit').set('Authorization', u.auth).expect(200);
  const [event, ...more] = await grants(u.userId);
  expect(more).toEqual([]);
  expect(event).toMatchObject({ actor_kind: 'system', actor_id: null, target_kind: 'user', data: { via: 'operator_emails' } });
  expect(JSON.stringify(event.data)).not.toContain('@'); // the target id names the account; no address in the data
});

it('a password reset proves the mailbox too: a listed address becomes an operator when it sets its password with a code', async () => {
  const u = await signUp(t, { email: 'reset@ops.example.com' });
  await t.http.post('/v1/auth/password/forgot').send({ email: 'reset@ops.example.com' }).expect(202);
  const code = await mailedCode('reset@ops.example.com', 'Reset your password');
  await t.http.post('/v1/auth/password/reset').send({ email: 'reset@ops.example.com', code, new_password: 'another horse battery staple' }).expect(204);
  const signedIn = await t.http.post('/v1/auth/login').send({ email: 'reset@ops.example.com', password: 'another horse battery staple', transport: 'bearer' }).expect(200);
  expect(signedIn.body.user).toMatchObject({ email_verified: true, operator: true });
  expect(await grants(u.userId)).toHaveLength(1);
});

/** Signs up through provider_a's browser flow with this email, verified by the provider or not: /me's body. */
async function socialSignUp(email: string, emailVerified: boolean) {
  const sub = uniqueSub('ops');
  await peers.a.setAccount(sub, { email, email_verified: emailVerified });
  const flow = await browserFlow(t, peers, 'provider_a', { sub });
  const cookie = liveCookies(flow.res).find((c) => c.startsWith('__Host-session='))!;
  return (await t.http.get('/v1/auth/me').set('Cookie', cookie).expect(200)).body;
}

it('an address the provider has not verified never makes an operator; a provider-verified sign-up of a listed address does', async () => {
  const unverified = await socialSignUp('social-unverified@ops.example.com', false);
  expect(unverified).toMatchObject({ email: 'social-unverified@ops.example.com', email_verified: false, operator: false });
  expect(await grants(unverified.id)).toHaveLength(0);

  const verified = await socialSignUp('social@ops.example.com', true);
  expect(verified).toMatchObject({ email: 'social@ops.example.com', email_verified: true, operator: true });
  expect(await grants(verified.id)).toHaveLength(1);
});

it('an address OPERATOR_EMAILS does not list stays an ordinary account when verified', async () => {
  const u = await signUp(t, { email: 'someone@example.com' });
  const code = await mailedCode('someone@example.com', 'Confirm your email address');
  const verified = await t.http.post('/v1/auth/verify-email').set('Authorization', u.auth).send({ code }).expect(200);
  expect(verified.body).toMatchObject({ email_verified: true, operator: false });
  expect(await grants(u.userId)).toHaveLength(0);
});
