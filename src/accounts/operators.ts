// The platform role `operator` (may call /ops): who gets it and who loses it. An email address is a
// claim until its owner proves the mailbox, and registration is open, so the role goes only to an
// account whose email is verified and that is enabled — whether OPERATOR_EMAILS lists it or an
// operator names it to `grant-operator`. Every grant and revocation writes an audit event in the
// transaction that makes it.
//
// OPERATOR_EMAILS is applied at every start and again the moment a listed address is verified
// (verification code, password reset, or sign-up with a provider-verified email), so nobody waits
// for a restart, and nobody who registers a listed address first gets the role by doing so.
import type { Scope } from '../platform/scope';
import type { Actor, AuditService } from '../audit/service';
import * as store from './store';

/** What `grant-operator` did, or why it refused. */
export type GrantOutcome = 'granted' | 'already_operator' | 'no_account' | 'unverified' | 'disabled';
/** What `revoke-operator` did. */
export type RevokeOutcome = 'revoked' | 'not_operator' | 'no_account';

const SYSTEM: Actor = { kind: 'system', id: null };
/** The account commands run with the database's owner, not as a signed-in operator. */
const COMMAND: Actor = { kind: 'operator', id: null };

type Deps = Scope<{ audit: AuditService }>;

/** Each change and its audit event share a transaction (the caller's, when there is one). */
export class OperatorGrants {
  constructor(private readonly s: Deps) {}

  private async recordGranted(tx: Deps, userId: string, actor: Actor, via: string): Promise<void> {
    await tx.audit.record({ action: 'ops.operator.granted', actor, target: { kind: 'user', id: userId }, data: { via } });
  }

  /** At start: every listed account that is verified and enabled. The ids granted now. */
  grantListed(): Promise<string[]> {
    return this.s.transaction(async (tx) => {
      const granted = await store.grantVerifiedOperators(tx.db, tx.config.operatorEmails, tx.now());
      for (const id of granted) await this.recordGranted(tx, id, SYSTEM, 'operator_emails');
      return granted;
    });
  }

  /** Right after the account's email became verified: the role, when OPERATOR_EMAILS lists it. */
  grantIfListed(userId: string): Promise<boolean> {
    return this.s.transaction(async (tx) => {
      const [granted] = await store.grantVerifiedOperators(tx.db, tx.config.operatorEmails, tx.now(), userId);
      if (granted) await this.recordGranted(tx, granted, SYSTEM, 'operator_emails');
      return granted !== undefined;
    });
  }

  /** `grant-operator EMAIL`. */
  grant(email: string): Promise<GrantOutcome> {
    return this.s.transaction(async (tx) => {
      const user = await store.lockOperatorCandidate(tx.db, email);
      if (!user) return 'no_account';
      if (user.operator) return 'already_operator';
      if (user.disabled) return 'disabled';
      if (!user.verified) return 'unverified';
      await store.setOperator(tx.db, user.id, true, tx.now());
      await this.recordGranted(tx, user.id, COMMAND, 'command_line');
      return 'granted';
    });
  }

  /** `revoke-operator EMAIL`: takes effect on the account's next request (sessions read the flag each time). */
  revoke(email: string): Promise<RevokeOutcome> {
    return this.s.transaction(async (tx) => {
      const user = await store.lockOperatorCandidate(tx.db, email);
      if (!user) return 'no_account';
      if (!user.operator) return 'not_operator';
      await store.setOperator(tx.db, user.id, false, tx.now());
      await tx.audit.record({ action: 'ops.operator.revoked', actor: COMMAND, target: { kind: 'user', id: user.id }, data: { via: 'command_line' } });
      return 'revoked';
    });
  }

  /** Operators whose email is not verified: granted before grants asked for it, or by hand in SQL. */
  unverified(): Promise<string[]> {
    return store.unverifiedOperators(this.s.db);
  }
}
