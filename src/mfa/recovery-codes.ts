// Recovery codes (DESIGN 2): 10 at a time, `xxxxx-xxxxx` from [0-9a-z] (about 51 bits each),
// shown once, stored only as HMACs (a key derived from SESSION_SECRET), single use; a new set replaces
// the old one. They are what gets a user back in after losing the authenticator app.
import { randomInt } from 'node:crypto';
import type { Scope } from '../platform/scope';
import * as store from './store';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';
const RECOVERY_CODE_COUNT = 10;

function newCode(): string {
  let out = '';
  for (let i = 0; i < 10; i++) out += ALPHABET[randomInt(ALPHABET.length)];
  return `${out.slice(0, 5)}-${out.slice(5)}`;
}

/** As typed by a person: case and spaces do not matter, the hyphen may be left out. */
function normaliseRecoveryCode(input: string): string | null {
  const plain = input.toLowerCase().replace(/[\s-]+/g, '');
  return /^[0-9a-z]{10}$/.test(plain) ? `${plain.slice(0, 5)}-${plain.slice(5)}` : null;
}

type Deps = Scope;

export class RecoveryCodes {
  constructor(private readonly s: Deps) {}

  /** A new set for the user; the previous codes stop working. The plain codes exist only in the answer. */
  async replace(userId: string): Promise<{ codes: string[]; createdAt: Date }> {
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newCode);
    const createdAt = this.s.now();
    await store.replaceRecoveryCodes(this.s.db, userId, codes.map((c) => this.s.config.keys.recoveryCodes.sign(`recovery:${userId}:${c}`)), createdAt);
    return { codes, createdAt };
  }

  /** Spends one of the user's unused codes; false when it is not one. */
  async use(userId: string, input: string): Promise<boolean> {
    const code = normaliseRecoveryCode(input);
    // Looked up under every accepted key: codes made before SESSION_SECRET was rotated still work.
    return code !== null && store.useRecoveryCode(this.s.db, userId, this.s.config.keys.recoveryCodes.candidates(`recovery:${userId}:${code}`), this.s.now());
  }

  /** The second factor is off: the codes are of no use any more. */
  deleteAll(userId: string): Promise<void> {
    return store.deleteRecoveryCodes(this.s.db, userId);
  }
}
