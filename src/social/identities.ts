// A user's linked provider identities (GET and DELETE /v1/auth/identities): listing them and
// unlinking one. Linking happens in a sign-in or a link flow (service.ts).
import type { Scope } from '../platform/scope';
import type { AuditService, RequestMeta } from '../audit/service';
import type { AccountService } from '../accounts/service';
import { commonErrors } from '../errors';
import { pageById, type Page, type PageRequest } from '../pagination';
import { socialErrors } from './errors';
import * as store from './store';

type Deps = Scope<{ audit: AuditService; accounts: AccountService }>;

export class IdentityService {
  constructor(private readonly s: Deps) {}

  /** GET /v1/auth/identities: the user's identities, newest first, a page at a time. */
  listOwn(userId: string, request: PageRequest): Promise<Page<store.IdentityRow>> {
    return pageById('idn', request, (limit, beforeId) => store.listIdentities(this.s.db, userId, limit, beforeId));
  }

  /**
   * DELETE /v1/auth/identities/{id}: 404 unless it is the caller's; 409 `last_sign_in_method`
   * when no password, passkey or other identity would be left. Sessions are kept.
   */
  async unlinkOwn(userId: string, identityId: string, meta: RequestMeta): Promise<void> {
    await this.s.transaction(async (tx) => {
      const methods = await tx.accounts.lockSignInMethods(userId);
      if (!methods) throw commonErrors.unauthenticated();
      const identity = await store.findOwnIdentity(tx.db, userId, identityId);
      if (!identity) throw commonErrors.notFound('No such identity.');
      if (!methods.password && methods.passkeys === 0 && methods.identities <= 1) throw socialErrors.lastSignInMethod();
      await store.deleteIdentity(tx.db, identity.id);
      await tx.audit.record({
        action: 'social.identity.unlinked',
        actor: { kind: 'user', id: userId },
        target: { kind: 'identity', id: identity.id },
        data: { provider: identity.provider, via: 'user' },
        meta,
      });
    });
  }
}
