// Keys derived from SESSION_SECRET, one per purpose (HKDF-SHA256, RFC 5869, the purpose as `info`):
// knowing one purpose's key tells nothing of another's, and a purpose added later gets a key of
// its own without touching the others. The database role's password is not among them: it is
// made at random once and kept in the database (database-roles.ts), so rotating SESSION_SECRET
// never locks a running instance out of PostgreSQL.
//
// Rotation: the new secret signs, and the old ones given in SESSION_SECRET_PREVIOUS still verify
// what they signed (recovery codes live until used or replaced). Releases before this file keyed
// their HMACs with the secret itself; those keys verify too, so no recovery code made before an
// upgrade stops working.
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

export type KeyPurpose = 'one-time-codes' | 'recovery-codes' | 'mfa-encryption-key';

const SALT = 'tenant-api';

export function deriveKey(secret: string, purpose: KeyPurpose): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, SALT, purpose, 32));
}

/** HMACs of one purpose: made with the current secret's key, checked against every key still accepted. */
export class HmacKeyRing {
  private readonly keys: Buffer[];

  /** `secrets`: the current one first, then those being rotated out. */
  constructor(secrets: string[], purpose: KeyPurpose) {
    this.keys = [...secrets.map((s) => deriveKey(s, purpose)), ...secrets.map((s) => Buffer.from(s, 'utf8'))];
  }

  sign(message: string): Buffer {
    return createHmac('sha256', this.keys[0]!).update(message).digest();
  }

  /** The message's HMAC under every accepted key, the current one first (to look a stored one up). */
  candidates(message: string): Buffer[] {
    return this.keys.map((key) => createHmac('sha256', key).update(message).digest());
  }

  /** Whether `stored` is the message's HMAC under any accepted key; every key is tried (no early exit). */
  verify(message: string, stored: Buffer): boolean {
    let match = false;
    for (const candidate of this.candidates(message)) {
      if (candidate.length === stored.length && timingSafeEqual(candidate, stored)) match = true;
    }
    return match;
  }
}
