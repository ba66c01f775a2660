// DESIGN 2: a deleted account's personal data is removed, wherever the service copied it: job runs
// (every kind of payload, not only mail's), mail records, audit data (invitations name the
// invitee's address). And retention removes sessions once they stopped working, idle timeout
// included, with their IP and user agent. Through HTTP, with the real workers and SMTP.
import type { TestApp } from '../support/test-app';
import { codeIn, startAppWithSmtp, type TestSmtpServer } from '../support/smtp';
import { waitFor } from '../support/wait';
import { PASSWORD, signUp } from '../support/accounts';
import { createOrg } from '../support/orgs';

let t: TestApp;
let smtp: TestSmtpServer;
let close: () => Promise<void>;
beforeAll(async () => {
  ({ t, smtp, close } = await startAppWithSmtp({ BCRYPT_COST: '4', RATE_LIMIT_REGISTER_PER_MINUTE: '1000' }));
});
afterAll(() => close?.());

let n = 0;
const uniqueEmail = (tag: string) => `${tag}${++n}-${Date.now()}@example.com`;

/** Every row of the table that holds `text` anywhere (any column, case-insensitively). */
const rowsHolding = (table: string, text: string) => t.ctx.db(table).whereRaw(`row_to_json(${table})::text ilike ?`, [`%${text}%`]);

async function allRunsFinal() {
  await waitFor('every job run to be final', async () => (await t.ctx.db('job_runs').whereNotIn('state', ['completed', 'cancelled', 'discarded'])).length === 0, 15_000);
}

it('after register → forgot password → verify → delete, no job run, mail record or audit event holds the address', async () => {
  const email = uniqueEmail('Forget.Me');
  const u = await signUp(t, { email });
  // Typed as a person might, in another case.
  await t.http.post('/v1/auth/password/forgot').send({ email: email.toUpperCase() }).expect(202);
  const code = codeIn(await smtp.waitForMessage((m) => m.to.includes(email.toLowerCase()) && m.subject === 'Confirm your email address'));
  await t.http.post('/v1/auth/verify-email').set('Authorization', u.auth).send({ code }).expect(200);
  await smtp.waitForMessage((m) => m.to.includes(email.toLowerCase()) && m.subject === 'Reset your password');
  await allRunsFinal();
  expect((await rowsHolding('job_runs', email)).length).toBeGreaterThanOrEqual(2); // the address was there

  await t.http.delete('/v1/auth/me').set('Authorization', u.auth).send({ password: PASSWORD }).expect(204);
  expect(await rowsHolding('job_runs', email)).toEqual([]);
  expect(await rowsHolding('mail_messages', email)).toEqual([]);
  expect(await rowsHolding('audit_events', email)).toEqual([]);
});

it('an operator\'s test mail typed in another case is erased too', async () => {
  const email = uniqueEmail('tested');
  const u = await signUp(t, { email });
  const operator = await signUp(t, { email: uniqueEmail('operator') });
  await t.ctx.db('users').where({ id: operator.userId }).update({ is_operator: true });
  const sent = await t.http.post('/ops/mail/test').set('Authorization', operator.auth).send({ to: email.toUpperCase() }).expect(202);
  await allRunsFinal();
  await t.http.delete('/v1/auth/me').set('Authorization', u.auth).send({ password: PASSWORD }).expect(204);
  expect(await rowsHolding('job_runs', email)).toEqual([]);
  expect(await rowsHolding('mail_messages', email)).toEqual([]);
  expect(await rowsHolding('audit_events', email)).toEqual([]);
  // The erased run cannot be sent again: to nobody.
  const retried = await t.http.post(`/ops/jobs/runs/${sent.body.job_run_id}/retry`).set('Authorization', operator.auth).expect(422);
  expect(retried.body.code).toBe('job_payload_cleared');
});

it('invitation events (created, revoked) lose the invitee\'s address when the invitee deletes the account; the events stay', async () => {
  const owner = await signUp(t, { email: uniqueEmail('owner'), verified: true }); // founding an organisation asks for it
  const org = await createOrg(t, owner, { name: 'Personal data' });
  const inviteeEmail = uniqueEmail('invitee');
  const invitee = await signUp(t, { email: inviteeEmail });
  const invitation = await t.http.post(`/v1/orgs/${org.id}/invitations`).set('Authorization', owner.auth).send({ email: inviteeEmail, role: 'member' }).expect(201);
  await t.http.delete(`/v1/orgs/${org.id}/invitations/${invitation.body.id}`).set('Authorization', owner.auth).expect(204);
  const events = () => t.ctx.db('audit_events').where({ target_id: invitation.body.id }).whereIn('action', ['org.invitation.created', 'org.invitation.revoked']);
  expect((await events()).map((e) => e.data.email)).toEqual([inviteeEmail, inviteeEmail]);

  await allRunsFinal();
  await t.http.delete('/v1/auth/me').set('Authorization', invitee.auth).send({ password: PASSWORD }).expect(204);
  const after = await events();
  expect(after).toHaveLength(2);
  for (const event of after) {
    expect(event.data.email).toBeUndefined();
    expect(event.data.erased).toBe(true);
  }
  expect(await rowsHolding('audit_events', inviteeEmail)).toEqual([]);
});

it('a mail server\'s refusal that names the recipient leaves no trace of the address in the run\'s recorded errors', async () => {
  const email = uniqueEmail('refused');
  smtp.refuse({ code: 450, message: `Mailbox ${email} is busy, try later`, times: 1 });
  const u = await signUp(t, { email });
  const run = await waitFor('the verification mail to fail once', async () => {
    const [found] = await t.ctx.db('job_runs').whereRaw("payload->>'to' = ?", [email]).whereRaw('jsonb_array_length(errors) > 0');
    return found;
  }, 15_000);
  expect(JSON.stringify(run.errors)).toContain(email);

  await t.http.delete('/v1/auth/me').set('Authorization', u.auth).send({ password: PASSWORD }).expect(204);
  expect(await rowsHolding('job_runs', email)).toEqual([]);
  const after = await t.ctx.db('job_runs').where({ id: run.id }).first();
  expect(after.errors).toHaveLength(run.errors.length); // the attempts stay on record, without the address
});
