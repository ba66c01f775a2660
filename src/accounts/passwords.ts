// Passwords: bcrypt (async API, off the event loop) over a SHA-256 pre-hash, so passwords longer
// than bcrypt's 72-byte limit are never truncated (DESIGN 2). The pre-hash is base64 (44 bytes).
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

/** True when the stored hash was made with another cost than the configured one. */
export function needsRehash(hash: string, cost: number): boolean {
  return bcrypt.getRounds(hash) !== cost;
}

/** One of the 10,000 most common passwords (case-insensitive). */
export function isCommonPassword(password: string): boolean {
  common ??= new Set(dictionary['passwords-common'].slice(0, COMMON_COUNT).map((p: string) => p.toLowerCase()));
  return common.has(password.toLowerCase());
}

/**
 * A hash of a password nobody knows, made once at the configured cost: comparing against it when
 * the account does not exist keeps "unknown email" and "wrong password" equally slow.
 */
const dummyHashes = new Map<number, Promise<string>>();
export function dummyHash(cost: number): Promise<string> {
  let hash = dummyHashes.get(cost);
  if (!hash) {
    hash = hashPassword(`dummy-${Math.random()}`, cost);
    dummyHashes.set(cost, hash);
  }
  return hash;
}
