// Who is acting, as row-level security reads it (db/migrations/20261123100000_tenants.ts):
// transaction-local settings, so they end with the transaction and never leak to the next
// request that gets the pooled connection.
import type { Knex } from 'knex';

export interface TenantContext {
  userId: string;
  /** The organisation of the path (/v1/orgs/{orgId}): rows of other organisations stay invisible even to their members. */
  orgId?: string | null;
  /** The invitation being accepted: lets its invitee insert their own membership. */
  invitationId?: string | null;
}

/** Must run inside a transaction (outside one, set_config(…, true) would last one statement). */
export async function setTenantContext(trx: Knex.Transaction, who: TenantContext): Promise<void> {
  await trx.raw("select set_config('app.user_id', ?, true), set_config('app.org_id', ?, true), set_config('app.invitation_id', ?, true)", [
    who.userId,
    who.orgId ?? '',
    who.invitationId ?? '',
  ]);
}
