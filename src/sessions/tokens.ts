import { createHash, randomBytes } from 'node:crypto';

/** 32 random bytes, base64url: the only copy is the one handed to the client. */
export function newSessionToken(): string {
  return randomBytes(32).toString('base64url');
}

/** What is stored and looked up: a SHA-256 of the token (fast, and enough for 256-bit random input). */
export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** A syntactically possible token: avoids a database round trip for garbage. */
export function looksLikeToken(token: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(token);
}
