// Domain rows → the contract's shapes for organisations, members, invitations and projects, and
// the cursors of their lists.
import type { components } from '../../codegen/api-types';
import type { MemberRow, OrgView } from '../../src/orgs/service';
import type { InvitationRow } from '../../src/orgs/invitations';
import type { ProjectRow } from '../../src/projects/service';

type Schemas = components['schemas'];

const iso = (d: Date) => d.toISOString();

export const orgBody = (o: OrgView): Schemas['Org'] => ({
  id: o.id,
  name: o.name,
  slug: o.slug,
  role: o.role,
  member_count: o.memberCount,
  created_at: iso(o.createdAt),
  updated_at: iso(o.updatedAt),
  deleted_at: o.deletedAt ? iso(o.deletedAt) : null,
});

export const memberBody = (m: MemberRow): Schemas['Member'] => ({
  user_id: m.userId,
  email: m.email,
  name: m.name,
  role: m.role,
  joined_at: iso(m.joinedAt),
});

export const invitationBody = (i: InvitationRow): Schemas['Invitation'] => ({
  id: i.id,
  email: i.email,
  role: i.role,
  invited_by: i.invitedBy,
  created_at: iso(i.createdAt),
  expires_at: iso(i.expiresAt),
});

export const projectBody = (p: ProjectRow): Schemas['Project'] => ({
  id: p.id,
  org_id: p.orgId,
  name: p.name,
  description: p.description,
  created_by: p.createdBy,
  created_at: iso(p.createdAt),
  updated_at: iso(p.updatedAt),
});

/** Cursor of newest-first lists keyed by a prefixed id. */
export const idCursor =
  (prefix: 'org' | 'inv' | 'prj') =>
  (key: any): key is { id: string } =>
    typeof key?.id === 'string' && new RegExp(`^${prefix}_[0-9a-z]{26}$`).test(key.id);

/** Cursor of the members list (oldest membership first). */
export const isMemberCursor = (key: any): key is { t: string; u: string } =>
  typeof key?.t === 'string' && !Number.isNaN(Date.parse(key.t)) && typeof key?.u === 'string' && /^usr_[0-9a-z]{26}$/.test(key.u);
