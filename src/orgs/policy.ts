// Who may do what in an organisation (DESIGN 3): the one place these rules live. Services ask it
// before they change anything; handlers never re-derive a rule. Non-members never get this far:
// they are answered 404 by the membership lookup (OrgService.inOrg), so existence does not leak.
import { commonErrors } from '../errors';

export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];

const everyone: readonly Role[] = ROLES;
const managers: readonly Role[] = ['owner', 'admin'];
const owners: readonly Role[] = ['owner'];

/** Each action and the roles that may take it. */
const MATRIX = {
  'org.read': everyone,
  'org.update': managers,
  'org.delete': owners,
  'org.restore': owners,
  'org.leave': everyone,
  'members.read': everyone,
  'members.change_role': managers,
  'members.remove': managers,
  'invitations.read': managers,
  'invitations.manage': managers,
  'projects.read': everyone,
  'projects.create': everyone,
  'projects.update': everyone,
  'projects.delete': managers,
} as const satisfies Record<string, readonly Role[]>;

export type OrgAction = keyof typeof MATRIX;

export function can(role: Role, action: OrgAction): boolean {
  return (MATRIX[action] as readonly Role[]).includes(role);
}

/** 403 `forbidden` unless `role` may take `action`. */
export function authorize(role: Role, action: OrgAction): void {
  if (!can(role, action)) throw commonErrors.forbidden();
}

/**
 * Changing a member's role from `from` to `to`: owners may make any change; admins may move
 * non-owners between admin and member (themselves included), never touch an owner nor grant owner.
 */
export function authorizeRoleChange(actor: Role, from: Role, to: Role): void {
  authorize(actor, 'members.change_role');
  if (actor !== 'owner' && (from === 'owner' || to === 'owner')) throw commonErrors.forbidden();
}

/** Removing a member whose role is `target`: owners remove anyone, admins only non-owners. */
export function authorizeRemoval(actor: Role, target: Role): void {
  authorize(actor, 'members.remove');
  if (actor !== 'owner' && target === 'owner') throw commonErrors.forbidden();
}

/** An organisation keeps at least one owner: true when this change would take away its last. */
export function removesLastOwner(owners: number, from: Role, to: Role | null): boolean {
  return from === 'owner' && to !== 'owner' && owners <= 1;
}
