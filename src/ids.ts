// Public ids: a prefix and a lower-case ULID (48-bit time + 80 random bits, Crockford base32),
// so ids sort by creation time and never collide across instances.
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

export type IdPrefix = 'usr' | 'ses' | 'org' | 'prj' | 'inv' | 'pky' | 'idn' | 'aud' | 'rel' | 'ins' | 'req';

export function ulid(now = Date.now()): string {
  let out = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[t % 32] + out;
    t = Math.floor(t / 32);
  }
  const bytes = randomPool(16);
  for (let i = 0; i < 16; i++) out += ALPHABET[bytes[i]! % 32];
  return out;
}

// One call into the CSPRNG per 256 ids instead of one per id (an id is made for every request).
const POOL_SIZE = 4096;
let pool = Buffer.alloc(0);
let offset = 0;

function randomPool(n: number): Buffer {
  if (offset + n > pool.length) {
    pool = randomBytes(POOL_SIZE);
    offset = 0;
  }
  offset += n;
  return pool.subarray(offset - n, offset);
}

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid()}`;
}
