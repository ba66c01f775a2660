/**
 * TOTP (RFC 6238 over RFC 4226 HOTP) for tests, written with node:crypto only: the server uses the
 * `otpauth` package, and a test that computed codes with the same library could not catch its misuse.
 */
import { createHmac } from 'node:crypto';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** Decodes RFC 4648 base32 (no padding needed, case-insensitive). */
export function base32Decode(s: string): Buffer {
  // Authenticator apps show secrets grouped with spaces and may pad with '='; both carry no data.
  const clean = s.replace(/[\s=]/g, '').toUpperCase();
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of clean) {
    const i = BASE32.indexOf(ch);
    if (i < 0) throw new Error(`base32Decode: invalid character "${ch}"`);
    value = (value << 5) | i;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push((value >>> bits) & 0xff);
    }
  }
  // Leftover bits (< 8) are padding of the last quantum, not data.
  return Buffer.from(out);
}

/** Options shared by the TOTP functions: RFC 6238 defaults are 6 digits, 30 s steps, HMAC-SHA1. */
export interface TotpOptions {
  digits?: number;
  stepSeconds?: number;
  algorithm?: 'sha1' | 'sha256' | 'sha512';
}

/** The TOTP code for a raw key (not base32) at time `at` (default now); what the RFC 6238 test vectors are stated in. */
export function totpFromKey(key: Buffer, at: Date | number = Date.now(), opts: TotpOptions = {}): string {
  const { digits = 6, stepSeconds = 30, algorithm = 'sha1' } = opts;
  const ms = at instanceof Date ? at.getTime() : at;
  const counter = BigInt(Math.floor(ms / 1000 / stepSeconds));
  // The moving factor is an 8-byte big-endian counter (RFC 4226 §5.2); BigInt because step
  // counts past 2^32 (year 2106+ at 30 s, or in the 20000000000 vector at small steps) must not wrap.
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(counter);
  const mac = createHmac(algorithm, key).update(msg).digest();
  // Dynamic truncation (RFC 4226 §5.3): the low nibble of the last byte picks 4 bytes, top bit dropped.
  const offset = mac[mac.length - 1]! & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return (binary % 10 ** digits).toString().padStart(digits, '0');
}

/** The TOTP code for `secret` (base32) at time `at` (default now): HMAC-SHA1, 30 s step, 6 digits unless given. `at` is a Date or Unix milliseconds. */
export function totp(secret: string, at: Date | number = Date.now(), opts: TotpOptions = {}): string {
  return totpFromKey(base32Decode(secret), at, opts);
}

/** The code of the step `offsetSteps` away from `at` (e.g. -1 for the previous 30 s window). */
export function totpAt(secret: string, at: Date | number, offsetSteps: number): string {
  const ms = at instanceof Date ? at.getTime() : at;
  return totp(secret, ms + offsetSteps * 30_000);
}
