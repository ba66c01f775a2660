// Slugs derived from names (contract: createOrg): lower case, runs of other characters become
// `-`, at most 40 characters, `org-` plus six random characters when too little is left.
import { randomBytes } from 'node:crypto';

const MAX = 40;
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

export function deriveSlug(name: string): string {
  const base = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '') // accents off: "Café" → "cafe"
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, MAX)
    .replace(/^-+|-+$/g, '');
  if (base.length >= 3) return base;
  return `org-${randomSuffix()}`;
}

/** Six random characters, for a suffix no one can have taken first. */
function randomSuffix(): string {
  return [...randomBytes(6)].map((b) => ALPHABET[b % ALPHABET.length]).join('');
}

/** `base-n`, the base cut so the whole stays within 40 characters (and ends with no hyphen before the suffix). */
export function withSuffix(base: string, n: number): string {
  const suffix = `-${n}`;
  return `${base.slice(0, MAX - suffix.length).replace(/-+$/, '')}${suffix}`;
}
