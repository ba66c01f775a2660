// Domain rows → the contract's shapes for organisations, members, invitations and projects.
import type { components } from '../../codegen/api-types';
import type { MemberRow, OrgView } from '../../src/orgs/service';
import type { InvitationRow } from '../../src/orgs/invitations';
import type { ProjectRow } from '../../src/projects/service';
import { isoString } from '../../src/platform/timestamps';

type Schemas = components['schemas'];

export const orgBody = (o: OrgView): Schemas['Org'] => ({
  id: o.id,
  name: o.name,
  slug: o.slug,
  role: o.role,
  member_count: o.memberCount,
  created_at: isoString(o.createdAt),
  updated_at: isoString(o.updatedAt),
  deleted_at: o.deletedAt ? isoString(o.deletedAt) : null,
});

export const memberBody = (m: MemberRow): Schemas['Member'] => ({
  user_id: m.userId,
  email: m.email,
  name: m.name,
  role: m.role,
  joined_at: isoString(m.joinedAt),
});

export const invitationBody = (i: InvitationRow): Schemas['Invitation'] => ({
  id: i.id,
  email: i.email,
  role: i.role,
  invited_by: i.invitedBy,
  created_at: isoString(i.createdAt),
  expires_at: isoString(i.expiresAt),
});

export const projectBody = (p: ProjectRow): Schemas['Project'] => ({
  id: p.id,
  org_id: p.orgId,
  name: p.name,
  description: p.description,
  created_by: p.createdBy,
  created_at: isoString(p.createdAt),
  updated_at: isoString(p.updatedAt),
});
