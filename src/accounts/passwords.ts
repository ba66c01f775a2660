// Passwords: bcrypt (async API, off the event loop) over a SHA-256 pre-hash, so passwords longer
// than bcrypt's 72-byte limit are never truncated (DESIGN 2). The pre-hash is base64 (44 bytes).
// Not usable inside a database transaction (see src/services.ts): 250 ms of hashing would hold it.
import { createHash } from 'node:crypto';
import bcrypt from 'bcrypt';
import { dictionary } from '@zxcvbn-ts/language-common';

const COMMON_COUNT = 10_000;
let common: Set<string> | undefined;

function prehash(password: string): string {
  return createHash('sha256').update(password.normalize('NFKC'), 'utf8').digest('base64');
}

export function hashPassword(password: string, cost: number): Promise<string> {
  return bcrypt.hash(prehash(password), cost);
}

export function verifyPassword(password: string, hash: string): Promise<boolean> {
  return bcrypt.compare(prehash(password), hash);
}

/** One of the 10,000 most common passwords (case-insensitive). */
export function isCommonPassword(password: string): boolean {
  common ??= new Set(dictionary['passwords-common'].slice(0, COMMON_COUNT).map((p: string) => p.toLowerCase()));
  return common.has(password.toLowerCase());
}

/**
 * A hash of a password nobody knows, made once per cost: comparing against it when the account
 * does not exist keeps "unknown email" and "wrong password" equally slow.
 */
const dummyHashes = new Map<number, Promise<string>>();

export class PasswordHasher {
  constructor(
    private readonly cost: number,
    private readonly inTransaction = false,
  ) {}

  hash(password: string): Promise<string> {
    this.assertOutsideTransaction();
    return hashPassword(password, this.cost);
  }

  /** Compares against `hash`, or against the dummy hash when there is none (same cost either way). */
  async verify(password: string, hash: string | null): Promise<boolean> {
    this.assertOutsideTransaction();
    const matches = await verifyPassword(password, hash ?? (await this.dummyHash()));
    return matches && hash !== null;
  }

  /** True when the stored hash was made with another cost than the configured one. */
  needsRehash(hash: string): boolean {
    return bcrypt.getRounds(hash) !== this.cost;
  }

  /** Made at start-up (main.ts), so the first unknown-email sign-in is not slower than others. */
  dummyHash(): Promise<string> {
    let hash = dummyHashes.get(this.cost);
    if (!hash) {
      hash = hashPassword(`dummy-${Math.random()}`, this.cost);
      dummyHashes.set(this.cost, hash);
    }
    return hash;
  }

  private assertOutsideTransaction(): void {
    if (this.inTransaction) throw new Error('passwords are not hashed inside a database transaction (bcrypt would hold it open)');
  }
}
