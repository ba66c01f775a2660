// Organisations and their members. Every operation under /v1/orgs/{orgId} starts with `inOrg`:
// one query finds the organisation with the caller's membership (non-members, unknown ids and
// deleted organisations all take that same path to the same 404), then the policy module says
// whether the caller's role may act (403). Changes and their audit events share one transaction,
// run as the caller under row-level security.
import { userActor, type RequestMeta } from '../audit/service';
import type { AuditService } from '../audit/service';
import type { Scope } from '../platform/scope';
import type { RuntimeSettings } from '../settings/runtime';
import type { Caller } from '../sessions/service';
import { commonErrors } from '../errors';
import { newId } from '../ids';
import { pageAfter, pageById, type Page, type PageRequest } from '../pagination';
import { orgErrors } from './errors';
import { authorize, authorizeRemoval, authorizeRoleChange, removesLastOwner, type OrgAction, type Role } from './policy';
import { deriveSlug, withSuffix } from './slugs';
import * as store from './store';
import * as invitationsStore from './invitations-store';
import { durationMs } from '../config/settings-catalog';

export type { MemberRow } from './store';
export type { Role } from './policy';

/** An organisation as its member sees it. */
export type OrgView = store.OrgRow & { role: Role };

/** What `inOrg` hands the work: the caller's scope bound to the transaction, the organisation and the caller's role. */
export interface InOrg<S extends Scope> {
  tx: S;
  org: store.OrgRow;
  role: Role;
}

export interface InOrgOptions {
  /** Lock the organisation row: membership changes, so the owner count cannot change underneath. */
  lock?: boolean;
  /** Also find a soft-deleted organisation (still within its restore window). */
  includeDeleted?: boolean;
}


type Deps = Scope<{ runtimeSettings: RuntimeSettings; audit: AuditService }>;

export class OrgService {
  constructor(private readonly s: Deps) {}

  /** Soft-deleted organisations can be restored (and seen by their owners) for this long, then are purged. */
  private get restoreWindowMs(): number {
    return durationMs(this.s.runtimeSettings.get('retention.deleted_organisations'));
  }

  /**
   * Runs `fn` as `userId`, a member of `orgId` allowed to take `action`, in one transaction that
   * row-level security scopes to that organisation. 404 for non-members, unknown and deleted
   * organisations alike; 403 `forbidden` for members whose role may not.
   */
  inOrg<T, S extends Scope>(scope: S, userId: string, orgId: string, action: OrgAction, fn: (ctx: InOrg<S>) => Promise<T>, options: InOrgOptions = {}): Promise<T> {
    return scope.transaction(async (tx) => {
      // Sets the acting user and organisation for row-level security, like actingAs, in the same round trip.
      const found = await store.enterOrg(tx.db, userId, orgId, options.lock ?? false);
      this.admit(found, action, options.includeDeleted);
      return fn({ tx, org: found!, role: found!.role });
    });
  }

  /**
   * The rule every path into an organisation applies to the caller's membership (null: none):
   * 404 for non-members and for deleted organisations (but to their owners within the restore
   * window where `includeDeleted`), then 403 unless the role may take `action`.
   */
  admit(membership: { role: Role; deletedAt: Date | null } | null, action: OrgAction, includeDeleted = false): void {
    if (!membership) throw commonErrors.notFound();
    const { role, deletedAt } = membership;
    const reachable = !deletedAt || (includeDeleted && role === 'owner' && deletedAt.getTime() > this.s.now().getTime() - this.restoreWindowMs);
    if (!reachable) throw commonErrors.notFound();
    authorize(role, action);
  }

  /** GET /v1/orgs: the caller's organisations, newest first, a page at a time. */
  list(caller: Caller, request: PageRequest & { includeDeleted: boolean }): Promise<Page<OrgView>> {
    // One statement that sets the acting context itself (store.listForUser): no transaction.
    return pageById('org', request, (limit, beforeId) =>
      store.listForUser(this.s.db, caller.userId, {
        limit,
        beforeId,
        deletedSince: request.includeDeleted ? new Date(this.s.now().getTime() - this.restoreWindowMs) : null,
      }),
    );
  }

  /** POST /v1/orgs: needs a verified email; the caller becomes the first owner (`org.created`). */
  async create(caller: Caller, input: { name: string; slug?: string }, meta: RequestMeta): Promise<OrgView> {
    if (!caller.user.emailVerified) throw orgErrors.emailNotVerified('Verify your email address before creating an organisation.');
    const name = input.name.trim();
    return this.s.actingAs({ userId: caller.userId }, async (tx) => {
      const id = newId('org');
      const now = tx.now();
      const slug = input.slug ?? (await this.freeSlug(tx, deriveSlug(name)));
      // A given slug is checked by the insert itself; a derived one is free unless another
      // organisation took it in the last milliseconds (then 409, and a retry derives the next).
      if (!(await store.insertOrg(tx.db, { id, name, slug, createdBy: caller.userId, now }))) throw orgErrors.slugTaken(`The slug ${slug} is already taken.`);
      await store.addMembership(tx.db, { orgId: id, userId: caller.userId, role: 'owner', now });
      await tx.audit.record({ action: 'org.created', actor: userActor(caller.userId), target: { kind: 'org', id }, orgId: id, data: { name, slug }, meta });
      return { id, name, slug, memberCount: 1, createdAt: now, updatedAt: now, deletedAt: null, role: 'owner' };
    });
  }

  /** The derived slug, or the first free `-2`, `-3`… after it (a concurrent taker still meets the unique index). */
  private async freeSlug(tx: Deps, base: string): Promise<string> {
    const taken = await store.slugsTaken(tx.db, base);
    for (let n = 1; ; n++) {
      const candidate = n === 1 ? base : withSuffix(base, n);
      if (!taken.has(candidate)) return candidate;
    }
  }

  /** One round trip, no explicit transaction: app_enter_org reads the membership itself (what inOrg does first). */
  async get(caller: Caller, orgId: string): Promise<OrgView> {
    const found = await store.enterOrg(this.s.db, caller.userId, orgId, false);
    this.admit(found, 'org.read', true);
    return found!;
  }

  /** PATCH /v1/orgs/{orgId}: `org.renamed` when something changed. */
  update(caller: Caller, orgId: string, input: { name?: string; slug?: string }, meta: RequestMeta): Promise<OrgView> {
    return this.inOrg(this.s, caller.userId, orgId, 'org.update', async ({ tx, org, role }) => {
      const name = input.name?.trim();
      const change = { name: name !== undefined && name !== org.name ? name : undefined, slug: input.slug !== undefined && input.slug !== org.slug ? input.slug : undefined };
      if (change.name === undefined && change.slug === undefined) return { ...org, role };
      const now = tx.now();
      if ((await store.updateOrg(tx.db, orgId, { ...change, now })) === 'slug_taken') throw orgErrors.slugTaken(`The slug ${change.slug} is already taken.`);
      await tx.audit.record({
        action: 'org.renamed',
        actor: userActor(caller.userId),
        target: { kind: 'org', id: orgId },
        orgId,
        data: { old_name: org.name, new_name: change.name ?? org.name, old_slug: org.slug, new_slug: change.slug ?? org.slug },
        meta,
      });
      return { ...org, name: change.name ?? org.name, slug: change.slug ?? org.slug, updatedAt: now, role };
    });
  }

  /** DELETE /v1/orgs/{orgId}: soft delete; open invitations are revoked (`org.deleted`). */
  delete(caller: Caller, orgId: string, meta: RequestMeta): Promise<OrgView> {
    return this.inOrg(
      this.s,
      caller.userId,
      orgId,
      'org.delete',
      async ({ tx, org, role }) => {
        const now = tx.now();
        await store.setDeletedAt(tx.db, orgId, now, now);
        const revoked = await invitationsStore.revokeAllUnanswered(tx.db, orgId, now);
        await tx.audit.record({ action: 'org.deleted', actor: userActor(caller.userId), target: { kind: 'org', id: orgId }, orgId, data: { invitations_revoked: revoked }, meta });
        return { ...org, deletedAt: now, updatedAt: now, role };
      },
      { lock: true },
    );
  }

  /** POST /v1/orgs/{orgId}/restore: owners, within the restore window (setting `retention.deleted_organisations`, 30 days by default) (`org.restored`); 409 `not_deleted`. */
  restore(caller: Caller, orgId: string, meta: RequestMeta): Promise<OrgView> {
    return this.inOrg(
      this.s,
      caller.userId,
      orgId,
      'org.restore',
      async ({ tx, org, role }) => {
        if (!org.deletedAt) throw orgErrors.notDeleted();
        const now = tx.now();
        await store.setDeletedAt(tx.db, orgId, null, now);
        await tx.audit.record({ action: 'org.restored', actor: userActor(caller.userId), target: { kind: 'org', id: orgId }, orgId, meta });
        return { ...org, deletedAt: null, updatedAt: now, role };
      },
      { lock: true, includeDeleted: true },
    );
  }

  /** POST /v1/orgs/{orgId}/leave (and removing oneself): 409 `last_owner` for the only owner (`org.member.left`). */
  leave(caller: Caller, orgId: string, meta: RequestMeta): Promise<void> {
    return this.inOrg(
      this.s,
      caller.userId,
      orgId,
      'org.leave',
      async ({ tx, role }) => {
        if (removesLastOwner(await store.countOwners(tx.db, orgId), role, null)) {
          throw orgErrors.lastOwner('You are the only owner. Make someone else an owner first or delete the organisation.');
        }
        await store.removeMembership(tx.db, orgId, caller.userId);
        await tx.audit.record({ action: 'org.member.left', actor: userActor(caller.userId), target: { kind: 'user', id: caller.userId }, orgId, data: { role }, meta });
      },
      { lock: true },
    );
  }

  /** GET /v1/orgs/{orgId}/members: oldest membership first, a page at a time; the cursor is `{t: joined_at, u: user id}`. */
  listMembers(caller: Caller, orgId: string, request: PageRequest): Promise<Page<store.MemberRow>> {
    return pageAfter(
      request,
      (key): key is { t: string; u: string } =>
        typeof key?.t === 'string' && !Number.isNaN(Date.parse(key.t)) && typeof key?.u === 'string' && /^usr_[0-9a-z]{26}$/.test(key.u),
      (limit, after) =>
        this.inOrg(this.s, caller.userId, orgId, 'members.read', ({ tx }) =>
          store.listMembers(tx.db, orgId, { limit, after: after && { joinedAt: after.t, userId: after.u } }),
        ),
      (last) => ({ t: last.joinedAt.toISOString(), u: last.userId }),
    );
  }

  /** PATCH /v1/orgs/{orgId}/members/{userId} (`org.member.role_changed` when it changed). */
  changeRole(caller: Caller, orgId: string, userId: string, to: Role, meta: RequestMeta): Promise<store.MemberRow> {
    return this.inOrg(
      this.s,
      caller.userId,
      orgId,
      'members.change_role',
      async ({ tx, role }) => {
        const member = await store.findMember(tx.db, orgId, userId);
        if (!member) throw commonErrors.notFound();
        authorizeRoleChange(role, member.role, to);
        if (member.role === to) return member;
        if (removesLastOwner(await store.countOwners(tx.db, orgId), member.role, to)) throw orgErrors.lastOwner();
        await store.setRole(tx.db, orgId, userId, to);
        await tx.audit.record({
          action: 'org.member.role_changed',
          actor: userActor(caller.userId),
          target: { kind: 'user', id: userId },
          orgId,
          data: { old_role: member.role, new_role: to },
          meta,
        });
        return { ...member, role: to };
      },
      { lock: true },
    );
  }

  /** DELETE /v1/orgs/{orgId}/members/{userId}; oneself is `leave` (`org.member.removed`). */
  removeMember(caller: Caller, orgId: string, userId: string, meta: RequestMeta): Promise<void> {
    if (userId === caller.userId) return this.leave(caller, orgId, meta);
    return this.inOrg(
      this.s,
      caller.userId,
      orgId,
      'members.remove',
      async ({ tx, role }) => {
        const member = await store.findMember(tx.db, orgId, userId);
        if (!member) throw commonErrors.notFound();
        authorizeRemoval(role, member.role);
        if (removesLastOwner(await store.countOwners(tx.db, orgId), member.role, null)) throw orgErrors.lastOwner();
        await store.removeMembership(tx.db, orgId, userId);
        await tx.audit.record({ action: 'org.member.removed', actor: userActor(caller.userId), target: { kind: 'user', id: userId }, orgId, data: { role: member.role }, meta });
      },
      { lock: true },
    );
  }

  /**
   * Account deletion, inside its transaction: 409 `last_owner` while the user is the only owner
   * of a live organisation that has other members; otherwise every membership goes
   * (`org.member.left` each), and organisations left with no member are soft-deleted.
   */
  removeAccountMemberships(userId: string, meta: RequestMeta): Promise<void> {
    return this.s.actingAs({ userId }, async (tx) => {
      const memberships = await store.lockMembershipsOf(tx.db, userId);
      if (memberships.some((m) => !m.deleted && m.memberCount > 1 && removesLastOwner(m.owners, m.role, null))) {
        throw orgErrors.lastOwner('You are the only owner of an organisation with other members: hand ownership over first.');
      }
      const now = tx.now();
      const orphaned = await store.removeAllMembershipsOf(
        tx.db,
        userId,
        memberships.map((m) => m.orgId),
        now,
      );
      for (const m of memberships) {
        const data = { role: m.role, reason: 'account_deleted', ...(orphaned.includes(m.orgId) && { org_deleted: true }) };
        await tx.audit.record({ action: 'org.member.left', actor: userActor(userId), target: { kind: 'user', id: userId }, orgId: m.orgId, data, meta });
      }
    });
  }

  /** Retention: purges organisations soft-deleted before `cutoff`, in batches; rows removed. */
  async purgeDeleted(cutoff: Date, batchSize = 1_000): Promise<number> {
    let total = 0;
    for (;;) {
      // The function runs as the tables' owner: the only cross-tenant delete the service can make.
      const removed = await store.purgeDeletedBatch(this.s.db, cutoff, batchSize);
      total += removed;
      if (removed === 0) return total;
    }
  }
}
