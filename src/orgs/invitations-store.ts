// SQL for invitations. Statements name their organisation; accept finds its invitation by token
// through a function (db/migrations/20261123100000_tenants.ts), since its reader is not a member yet.
import type { Db } from '../platform/database';

export interface InvitationRow {
  id: string;
  orgId: string;
  email: string;
  role: 'admin' | 'member';
  invitedBy: string;
  createdAt: Date;
  expiresAt: Date;
}

/** What accept learns from a token, whatever the invitation's state. */
export interface TokenLookup {
  id: string;
  orgId: string;
  email: string;
  role: 'admin' | 'member';
  expiresAt: Date;
  acceptedAt: Date | null;
  revokedAt: Date | null;
  orgDeletedAt: Date | null;
}

const COLUMNS = ['id', 'org_id', 'email', 'role', 'invited_by', 'created_at', 'expires_at'];

/** An invitations row as COLUMNS selects it. */
interface InvitationRecord {
  id: string;
  org_id: string;
  email: string;
  role: 'admin' | 'member';
  invited_by: string;
  created_at: Date;
  expires_at: Date;
}

/** A row of app_invitation_by_token_hash (db/migrations/20261123100000_tenants.ts). */
interface TokenLookupRecord {
  id: string;
  org_id: string;
  email: string;
  role: 'admin' | 'member';
  expires_at: Date;
  accepted_at: Date | null;
  revoked_at: Date | null;
  org_deleted_at: Date | null;
}

const toInvitation = (r: InvitationRecord): InvitationRow => ({
  id: r.id,
  orgId: r.org_id,
  email: r.email,
  role: r.role,
  invitedBy: r.invited_by,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

/** An open invitation (not accepted, not revoked, not expired) of the organisation. */
export async function findOpen(db: Db, orgId: string, id: string, now: Date): Promise<InvitationRow | null> {
  const row = await db('invitations')
    .where({ org_id: orgId, id })
    .whereNull('accepted_at')
    .whereNull('revoked_at')
    .where('expires_at', '>', now)
    .forUpdate()
    .first(COLUMNS);
  return row ? toInvitation(row) : null;
}

/** The unanswered invitation to this address, expired or not. */
export async function findUnanswered(db: Db, orgId: string, email: string): Promise<InvitationRow | null> {
  const row = await db('invitations').where({ org_id: orgId, email }).whereNull('accepted_at').whereNull('revoked_at').first(COLUMNS);
  return row ? toInvitation(row) : null;
}

export async function listOpen(db: Db, orgId: string, page: { limit: number; beforeId?: string; now: Date }): Promise<InvitationRow[]> {
  const rows = await db('invitations')
    .where({ org_id: orgId })
    .whereNull('accepted_at')
    .whereNull('revoked_at')
    .where('expires_at', '>', page.now)
    .modify((q) => {
      if (page.beforeId) q.where('id', '<', page.beforeId);
    })
    .orderBy('id', 'desc')
    .limit(page.limit)
    .select(COLUMNS);
  return rows.map(toInvitation);
}

export async function insert(db: Db, inv: InvitationRow & { tokenHash: Buffer }): Promise<void> {
  await db('invitations').insert({
    id: inv.id,
    org_id: inv.orgId,
    email: inv.email,
    role: inv.role,
    token_hash: inv.tokenHash,
    invited_by: inv.invitedBy,
    created_at: inv.createdAt,
    expires_at: inv.expiresAt,
  });
}

export async function rotateToken(db: Db, orgId: string, id: string, tokenHash: Buffer, expiresAt: Date): Promise<void> {
  await db('invitations').where({ org_id: orgId, id }).update({ token_hash: tokenHash, expires_at: expiresAt });
}

export async function revoke(db: Db, orgId: string, id: string, now: Date): Promise<void> {
  await db('invitations').where({ org_id: orgId, id }).update({ revoked_at: now });
}

/** Every unanswered invitation of the organisation (it is being deleted); how many. */
export async function revokeAllUnanswered(db: Db, orgId: string, now: Date): Promise<number> {
  return db('invitations').where({ org_id: orgId }).whereNull('accepted_at').whereNull('revoked_at').update({ revoked_at: now });
}

export async function findByTokenHash(db: Db, tokenHash: Buffer): Promise<TokenLookup | null> {
  const { rows } = await db.raw<{ rows: TokenLookupRecord[] }>('select * from app_invitation_by_token_hash(?)', [tokenHash]);
  const r = rows[0];
  if (!r) return null;
  return {
    id: r.id,
    orgId: r.org_id,
    email: r.email,
    role: r.role,
    expiresAt: r.expires_at,
    acceptedAt: r.accepted_at,
    revokedAt: r.revoked_at,
    orgDeletedAt: r.org_deleted_at,
  };
}

/** Marks it accepted unless someone did first; false then. */
export async function markAccepted(db: Db, orgId: string, id: string, userId: string, now: Date): Promise<boolean> {
  const n = await db('invitations').where({ org_id: orgId, id }).whereNull('accepted_at').whereNull('revoked_at').update({ accepted_at: now, accepted_by: userId });
  return n === 1;
}
