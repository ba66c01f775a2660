// Invitations end to end: created by owners and admins, mailed through `service.mail.send` to a
// real SMTP server, accepted with the token from the received link by the invitee only; resend
// rotates the token and expiry (3 per 15 minutes); revoked, expired and used tokens each answer
// their own code; the token is never stored or queued in clear.
import type { TestApp } from '../support/test-app';
import { startAppWithSmtp, type ReceivedMail, type TestSmtpServer } from '../support/smtp';
import { signedInUser } from '../support/users';
import { createInvitation, orgWithOwner } from '../support/orgs';
import { waitFor } from '../support/wait';

let t: TestApp;
let smtp: TestSmtpServer;
let close: () => Promise<void>;
beforeAll(async () => {
  ({ t, smtp, close } = await startAppWithSmtp({ INVITATION_URL: 'https://app.example.com/join' }));
});
afterAll(() => close?.());

const DAY = 24 * 3600 * 1000;

/** The token in the invitation link of a received message (its text part is quoted-printable). */
function tokenIn(message: ReceivedMail): string {
  const text = message.raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
  const token = /https:\/\/app\.example\.com\/join#token=([A-Za-z0-9_-]{43})/.exec(text)?.[1];
  if (!token) throw new Error(`no invitation link in "${message.subject}"`);
  return token;
}

async function invite(orgId: string, auth: string, email: string, role: 'admin' | 'member' = 'member') {
  const before = smtp.messages.length;
  const inv = await createInvitation(t, auth, orgId, { email, role });
  const mail = await smtp.waitForMessage((m) => m.to.includes(email.toLowerCase()) && smtp.messages.indexOf(m) >= before);
  return { inv, mail, token: tokenIn(mail) };
}

const accept = (auth: string, token: string) => t.http.post('/v1/invitations/accept').set('Authorization', auth).send({ token });

it('an invitation is mailed with a single-use link; the invitee joins with its role; audited; the token is stored nowhere in clear', async () => {
  const { owner, org } = await orgWithOwner(t, { name: 'Invite Co' });
  const invitee = await signedInUser(t.ctx, { verified: true });
  const { inv, mail, token } = await invite(org.id, owner.auth, invitee.email.toUpperCase(), 'admin');
  expect(inv).toMatchObject({ email: invitee.email.toLowerCase(), role: 'admin', invited_by: owner.userId });
  expect(new Date(inv.expires_at).getTime() - new Date(inv.created_at).getTime()).toBe(7 * DAY);
  expect(mail.subject).toBe('You are invited to join Invite Co');
  expect(mail.subject).not.toContain(token);

  // Listed while open.
  const list = (await t.http.get(`/v1/orgs/${org.id}/invitations`).set('Authorization', owner.auth).expect(200)).body;
  expect(list.items.map((i: { id: string }) => i.id)).toEqual([inv.id]);

  // Neither the stored mail, the job payload, the audit log nor the invitation row holds the token.
  const stored = JSON.stringify(await waitFor('the stored copy of the mail', async () => {
    const rows = await t.ctx.db('mail_messages').where({ to: invitee.email.toLowerCase() }).select();
    return rows.length ? rows : null;
  }));
  const runs = JSON.stringify(await t.ctx.db('job_runs').select('payload'));
  const audit = JSON.stringify(await t.ctx.db('audit_events').select('data'));
  for (const text of [stored, runs, audit]) expect(text).not.toContain(token);
  expect(stored).toContain('[redacted]');

  const joined = (await accept(invitee.auth, token).expect(200)).body;
  expect(joined.org).toMatchObject({ id: org.id, role: 'admin', member_count: 2 });
  expect(joined.member).toMatchObject({ user_id: invitee.userId, role: 'admin' });
  const event = await t.ctx.db('audit_events').where({ action: 'org.invitation.accepted', org_id: org.id }).first();
  expect(event).toMatchObject({ actor_id: invitee.userId, target_id: inv.id });

  // Single use, and no longer listed.
  expect((await accept(invitee.auth, token).expect(410)).body.code).toBe('invitation_used');
  expect((await t.http.get(`/v1/orgs/${org.id}/invitations`).set('Authorization', owner.auth).expect(200)).body.items).toEqual([]);
  // The new admin manages the organisation.
  await t.http.patch(`/v1/orgs/${org.id}`).set('Authorization', invitee.auth).send({ name: 'Invite Co 2' }).expect(200);
});

it('accept needs a verified email equal to the invited address; refusals leave the invitation open', async () => {
  const { owner, org } = await orgWithOwner(t, { name: 'Invite Co' });
  const invitee = await signedInUser(t.ctx, { verified: true });
  const { token } = await invite(org.id, owner.auth, invitee.email);

  const unverified = await signedInUser(t.ctx);
  expect((await accept(unverified.auth, token).expect(403)).body.code).toBe('email_not_verified');
  const stranger = await signedInUser(t.ctx, { verified: true });
  expect((await accept(stranger.auth, token).expect(403)).body.code).toBe('invitation_email_mismatch');
  expect((await accept(owner.auth, token).expect(403)).body.code).toBe('invitation_email_mismatch');
  expect((await accept(stranger.auth, 'x'.repeat(43)).expect(404)).body.code).toBe('invitation_not_found');

  // The invitee still can; nobody else joined.
  await accept(invitee.auth, token).expect(200);
  const members = (await t.http.get(`/v1/orgs/${org.id}/members`).set('Authorization', owner.auth).expect(200)).body.items;
  expect(members.map((m: { user_id: string }) => m.user_id).sort()).toEqual([owner.userId, invitee.userId].sort());
});

it('409 for inviting a member or an address with an open invitation; an expired one can be replaced', async () => {
  const { owner, org } = await orgWithOwner(t, { name: 'Invite Co' });
  const member = await signedInUser(t.ctx, { verified: true });
  const { token } = await invite(org.id, owner.auth, member.email);
  await accept(member.auth, token).expect(200);
  const again = await t.http.post(`/v1/orgs/${org.id}/invitations`).set('Authorization', owner.auth).send({ email: member.email, role: 'member' }).expect(409);
  expect(again.body.code).toBe('already_member');

  await invite(org.id, owner.auth, 'pending@example.com');
  const dup = await t.http.post(`/v1/orgs/${org.id}/invitations`).set('Authorization', owner.auth).send({ email: 'Pending@Example.com', role: 'admin' }).expect(409);
  expect(dup.body.code).toBe('invitation_pending');

  t.clock.advance(7 * DAY + 1000);
  try {
    await invite(org.id, owner.auth, 'pending@example.com');
  } finally {
    t.clock.advance(-(7 * DAY + 1000));
  }
});

it('expired, revoked and resent-away tokens each answer clearly; members cannot manage invitations', async () => {
  const { owner, org } = await orgWithOwner(t, { name: 'Invite Co' });
  const invitee = await signedInUser(t.ctx, { verified: true });

  const expired = await invite(org.id, owner.auth, invitee.email);
  t.clock.advance(7 * DAY + 1000);
  try {
    expect((await accept(invitee.auth, expired.token).expect(410)).body.code).toBe('invitation_expired');
    // Expired: no longer open, so neither listed, revoked nor resent.
    expect((await t.http.get(`/v1/orgs/${org.id}/invitations`).set('Authorization', owner.auth).expect(200)).body.items).toEqual([]);
    await t.http.post(`/v1/orgs/${org.id}/invitations/${expired.inv.id}/resend`).set('Authorization', owner.auth).expect(404);
    await t.http.delete(`/v1/orgs/${org.id}/invitations/${expired.inv.id}`).set('Authorization', owner.auth).expect(404);
  } finally {
    t.clock.advance(-(7 * DAY + 1000));
  }

  const email = `revoked-${Date.now()}@example.com`;
  const revoked = await invite(org.id, owner.auth, email);
  await t.http.delete(`/v1/orgs/${org.id}/invitations/${revoked.inv.id}`).set('Authorization', owner.auth).expect(204);
  await t.http.delete(`/v1/orgs/${org.id}/invitations/${revoked.inv.id}`).set('Authorization', owner.auth).expect(404);
  const revokedEvent = await t.ctx.db('audit_events').where({ action: 'org.invitation.revoked', target_id: revoked.inv.id }).first();
  expect(revokedEvent).toMatchObject({ org_id: org.id, actor_id: owner.userId });

  // A revoked invitation's token: 410 invitation_revoked (checked with the invited user's own session).
  const holder = await signedInUser(t.ctx, { verified: true });
  const forHolder = await invite(org.id, owner.auth, holder.email);
  await t.http.delete(`/v1/orgs/${org.id}/invitations/${forHolder.inv.id}`).set('Authorization', owner.auth).expect(204);
  expect((await accept(holder.auth, forHolder.token).expect(410)).body.code).toBe('invitation_revoked');

  // Resend: a new token and expiry; the old link stops working.
  const other = await signedInUser(t.ctx, { verified: true });
  const first = await invite(org.id, owner.auth, other.email);
  t.clock.advance(DAY);
  let resent;
  try {
    const before = smtp.messages.length;
    resent = (await t.http.post(`/v1/orgs/${org.id}/invitations/${first.inv.id}/resend`).set('Authorization', owner.auth).expect(200)).body;
    expect(new Date(resent.expires_at).getTime()).toBe(t.clock.now.getTime() + 7 * DAY);
    const mail = await smtp.waitForMessage((m) => m.to.includes(other.email) && smtp.messages.indexOf(m) >= before);
    const newToken = tokenIn(mail);
    expect(newToken).not.toBe(first.token);
    expect((await accept(other.auth, first.token).expect(404)).body.code).toBe('invitation_not_found');
    await accept(other.auth, newToken).expect(200);
  } finally {
    t.clock.advance(-DAY);
  }

  // A member may not list, create, resend or revoke.
  const plain = await signedInUser(t.ctx, { verified: true });
  await accept(plain.auth, (await invite(org.id, owner.auth, plain.email)).token).expect(200);
  const open = await invite(org.id, owner.auth, `open-${Date.now()}@example.com`);
  for (const req of [
    t.http.get(`/v1/orgs/${org.id}/invitations`),
    t.http.post(`/v1/orgs/${org.id}/invitations`).send({ email: 'x@example.com', role: 'member' }),
    t.http.post(`/v1/orgs/${org.id}/invitations/${open.inv.id}/resend`),
    t.http.delete(`/v1/orgs/${org.id}/invitations/${open.inv.id}`),
  ]) {
    expect((await req.set('Authorization', plain.auth).expect(403)).body.code).toBe('forbidden');
  }
});

it('resends are limited to 3 per invitation per 15 minutes (429 with Retry-After)', async () => {
  const { owner, org } = await orgWithOwner(t, { name: 'Invite Co' });
  const { inv } = await invite(org.id, owner.auth, `limited-${Date.now()}@example.com`);
  for (let i = 0; i < 3; i++) await t.http.post(`/v1/orgs/${org.id}/invitations/${inv.id}/resend`).set('Authorization', owner.auth).expect(200);
  const res = await t.http.post(`/v1/orgs/${org.id}/invitations/${inv.id}/resend`).set('Authorization', owner.auth).expect(429);
  expect(res.body.code).toBe('rate_limited');
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  // An outsider trying the same invitation learns nothing: 404, not 429.
  const outsider = await signedInUser(t.ctx, { verified: true });
  await t.http.post(`/v1/orgs/${org.id}/invitations/${inv.id}/resend`).set('Authorization', outsider.auth).expect(404);
});

it('deleting the organisation revokes its open invitations; restoring does not revive them', async () => {
  const { owner, org } = await orgWithOwner(t, { name: 'Invite Co' });
  const invitee = await signedInUser(t.ctx, { verified: true });
  const { token } = await invite(org.id, owner.auth, invitee.email);
  await t.http.delete(`/v1/orgs/${org.id}`).set('Authorization', owner.auth).expect(200);
  expect((await accept(invitee.auth, token).expect(410)).body.code).toBe('invitation_revoked');
  await t.http.post(`/v1/orgs/${org.id}/restore`).set('Authorization', owner.auth).expect(200);
  expect((await accept(invitee.auth, token).expect(410)).body.code).toBe('invitation_revoked');
});
