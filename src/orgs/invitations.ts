// Invitations: created and resent by owners and admins, mailed through `service.mail.send` in the
// same transaction, accepted by the invitee. The token (32 random bytes) exists in clear only in
// the mail job's `secret` (cleared when the run ends) and the message sent; the database keeps
// its SHA-256. Rate limits (Redis) are counted between two transactions: after the caller is
// known to be a manager of the organisation (so outsiders learn nothing from a 429), before the
// work.
import { userActor, type RequestMeta } from '../audit/service';
import type { AuditService } from '../audit/service';
import type { MailService } from '../mail/service';
import type { Scope } from '../platform/scope';
import type { OrgService } from './service';
import type { Limits } from '../ratelimit/limits';
import type { Caller } from '../sessions/service';
import type { Attempt } from '../ratelimit/limits';
import { newId } from '../ids';
import { pageById, type Page, type PageRequest } from '../pagination';
import { hashToken, newSessionToken } from '../sessions/tokens';
import { commonErrors, rateLimited } from '../errors';
import { orgErrors } from './errors';
import * as store from './invitations-store';
import * as orgStore from './store';
import type { OrgView } from './service';

export type { InvitationRow } from './invitations-store';

const EXPIRY_DAYS = 7;
const EXPIRY_MS = EXPIRY_DAYS * 24 * 3600 * 1000;


type Deps = Scope<{ orgs: OrgService; limits: Limits; audit: AuditService; mail: MailService }>;

export class InvitationService {
  constructor(private readonly s: Deps) {}

  /** GET /v1/orgs/{orgId}/invitations: open invitations, newest first, a page at a time. */
  list(caller: Caller, orgId: string, request: PageRequest): Promise<Page<store.InvitationRow>> {
    return pageById('inv', request, (limit, beforeId) =>
      this.s.orgs.inOrg(this.s, caller.userId, orgId, 'invitations.read', ({ tx }) => store.listOpen(tx.db, orgId, { limit, beforeId, now: tx.now() })),
    );
  }

  /** POST /v1/orgs/{orgId}/invitations: 409 `already_member` / `invitation_pending`; 50 per organisation per hour (`org.invitation.created`). */
  async create(caller: Caller, orgId: string, input: { email: string; role: 'admin' | 'member' }, meta: RequestMeta): Promise<store.InvitationRow> {
    const email = input.email.trim().toLowerCase();
    await this.limitedAfterCheck(caller, orgId, { limit: 'invitations.org', subject: orgId }, 'Too many invitations', async () => undefined);
    return this.s.orgs.inOrg(
      this.s,
      caller.userId,
      orgId,
      'invitations.manage',
      async ({ tx, org }) => {
        if (await orgStore.isMemberByEmail(tx.db, orgId, email)) throw orgErrors.alreadyMember(`${email} is already a member of this organisation.`);
        const now = tx.now();
        const unanswered = await store.findUnanswered(tx.db, orgId, email);
        if (unanswered && unanswered.expiresAt > now) throw orgErrors.invitationPending(`${email} already has an open invitation. Resend it instead.`);
        if (unanswered) await store.revoke(tx.db, orgId, unanswered.id, now); // expired: closed, so the address can be invited again
        const token = newSessionToken();
        const invitation: store.InvitationRow = { id: newId('inv'), orgId, email, role: input.role, invitedBy: caller.userId, createdAt: now, expiresAt: new Date(now.getTime() + EXPIRY_MS) };
        await store.insert(tx.db, { ...invitation, tokenHash: hashToken(token) });
        const run = await this.queueMail(tx, caller, org.name, invitation, token, meta);
        await tx.audit.record({
          action: 'org.invitation.created',
          actor: userActor(caller.userId),
          target: { kind: 'invitation', id: invitation.id },
          orgId,
          data: { email, role: input.role, job_run_id: run.id },
          meta,
        });
        return invitation;
      },
      { lock: true },
    );
  }

  /** DELETE /v1/orgs/{orgId}/invitations/{invitationId}: open ones only, else 404 (`org.invitation.revoked`). */
  revoke(caller: Caller, orgId: string, invitationId: string, meta: RequestMeta): Promise<void> {
    return this.s.orgs.inOrg(this.s, caller.userId, orgId, 'invitations.manage', async ({ tx }) => {
      const now = tx.now();
      const invitation = await store.findOpen(tx.db, orgId, invitationId, now);
      if (!invitation) throw commonErrors.notFound();
      await store.revoke(tx.db, orgId, invitationId, now);
      await tx.audit.record({ action: 'org.invitation.revoked', actor: userActor(caller.userId), target: { kind: 'invitation', id: invitationId }, orgId, data: { email: invitation.email }, meta });
    });
  }

  /** POST …/invitations/{invitationId}/resend: a new token and expiry, mailed; 3 per 15 minutes (`org.invitation.resent`). */
  async resend(caller: Caller, orgId: string, invitationId: string, meta: RequestMeta): Promise<store.InvitationRow> {
    // Counted only once the invitation is known to be open in this organisation: nobody can spend
    // the budget of another organisation's invitation by naming it under their own.
    await this.limitedAfterCheck(caller, orgId, { limit: 'invitation_resend.invitation', subject: invitationId }, 'This invitation was resent too often', async (tx) => {
      if (!(await store.findOpen(tx.db, orgId, invitationId, tx.now()))) throw commonErrors.notFound();
    });
    return this.s.orgs.inOrg(this.s, caller.userId, orgId, 'invitations.manage', async ({ tx, org }) => {
      const now = tx.now();
      const invitation = await store.findOpen(tx.db, orgId, invitationId, now);
      if (!invitation) throw commonErrors.notFound();
      const token = newSessionToken();
      const expiresAt = new Date(now.getTime() + EXPIRY_MS);
      await store.rotateToken(tx.db, orgId, invitationId, hashToken(token), expiresAt);
      const run = await this.queueMail(tx, caller, org.name, { ...invitation, expiresAt }, token, meta);
      await tx.audit.record({ action: 'org.invitation.resent', actor: userActor(caller.userId), target: { kind: 'invitation', id: invitationId }, orgId, data: { job_run_id: run.id }, meta });
      return { ...invitation, expiresAt };
    });
  }

  /**
   * POST /v1/invitations/accept: the invitee (verified email equal to the invitation's) joins with
   * its role. Unknown token 404; expired, revoked, used 410 each with its code; a current member
   * 409 `already_member` (the invitation stays open). `org.invitation.accepted`.
   */
  async accept(caller: Caller, token: string, meta: RequestMeta): Promise<{ org: OrgView; member: orgStore.MemberRow }> {
    if (!caller.user.emailVerified) throw orgErrors.emailNotVerified('Verify your email address before accepting an invitation.');
    const userId = caller.userId;
    // The token lookup is a function that needs no acting context; the context comes once the
    // invitation's organisation is known.
    return this.s.transaction(async (lookupTx) => {
      const found = await store.findByTokenHash(lookupTx.db, hashToken(token));
      const now = lookupTx.now();
      if (!found) throw orgErrors.invitationNotFound();
      if (found.acceptedAt) throw orgErrors.invitationUsed();
      if (found.revokedAt || found.orgDeletedAt) throw orgErrors.invitationRevoked();
      if (found.expiresAt <= now) throw orgErrors.invitationExpired();
      if (found.email !== caller.user.email.toLowerCase()) throw orgErrors.invitationEmailMismatch();
      // From here row-level security sees the organisation of the invitation, and lets this
      // invitee (and only them) insert their own membership with its role.
      return lookupTx.actingAs({ userId, orgId: found.orgId, invitationId: found.id }, async (tx) => {
        if (await orgStore.findMembership(tx.db, found.orgId, userId)) throw orgErrors.alreadyMember('You are already a member of this organisation.');
        await orgStore.addMembership(tx.db, { orgId: found.orgId, userId, role: found.role, now });
        if (!(await store.markAccepted(tx.db, found.orgId, found.id, userId, now))) throw orgErrors.invitationUsed();
        await tx.audit.record({ action: 'org.invitation.accepted', actor: userActor(userId), target: { kind: 'invitation', id: found.id }, orgId: found.orgId, data: { role: found.role }, meta });
        const joined = (await orgStore.findMembership(tx.db, found.orgId, userId))!;
        const member = (await orgStore.findMember(tx.db, found.orgId, userId))!;
        return { org: { ...joined.org, role: joined.role }, member };
      });
    });
  }

  /**
   * 404/403 first (a read-only check, plus `check` of the target), then the limit: a 429 never
   * tells an outsider that the organisation or the invitation exists.
   */
  private async limitedAfterCheck(caller: Caller, orgId: string, attempt: Attempt, what: string, check: (tx: Deps) => Promise<void>): Promise<void> {
    await this.s.orgs.inOrg(this.s, caller.userId, orgId, 'invitations.manage', ({ tx }) => check(tx));
    const [state] = await this.s.limits.count([attempt]);
    if (state!.spent) {
      throw rateLimited(attempt.limit, state!.retryAfterSeconds, `${what}. Try again in ${state!.retryAfterSeconds} seconds.`);
    }
  }

  private queueMail(tx: Deps, caller: Caller, orgName: string, invitation: store.InvitationRow, token: string, meta: RequestMeta) {
    const link = `${this.s.config.invitationUrl}#token=${token}`;
    return tx.mail.queue(
      invitation.email,
      {
        template: 'invitation',
        params: { orgName, invitedBy: caller.user.name ?? caller.user.email, role: invitation.role, days: EXPIRY_DAYS },
        secret: { link },
      },
      { actor: userActor(caller.userId), meta },
    );
  }
}
