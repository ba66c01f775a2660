// Verifies a provider's ID token (native sign-in, and the browser flow's code exchange): signature
// against the provider's keys, `iss`, `aud` (one of our client ids), `exp` and `iat` within the
// clock skew, and the `nonce` claim against the nonce we issued (native sign-in with a provider
// whose SDK is given the nonce's SHA-256 hex: against that).
import { createHash, timingSafeEqual } from 'node:crypto';
import { errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import { ProviderUnreachable, type ProviderClient } from './providers';
import { providerUnavailable } from './errors';

/** Who the provider says signed in. */
export interface IdentityClaims {
  subject: string;
  email: string;
  emailVerified: boolean;
  name: string | null;
}

/** Why a token was refused, for the audit log (the client only ever sees `invalid_token`). */
export class TokenRejected extends Error {
  constructor(readonly reason: string) {
    super(`ID token rejected: ${reason}`);
  }
}

const sha256Hex = (value: string) => createHash('sha256').update(value).digest('hex');

function sameString(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function reasonOf(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `claim_${err.claim}`;
  if (err instanceof joseErrors.JWKSNoMatchingKey) return 'unknown_key';
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'signature';
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'algorithm';
  return 'malformed';
}

/** Throws TokenRejected (→ 401 `invalid_token`) or 503 `provider_unavailable` when the keys cannot be fetched. */
export async function verifyIdToken(
  client: ProviderClient,
  token: string,
  expect: { audiences: string[]; nonce: string; nonceHashed: boolean; now: Date; skewSeconds: number },
): Promise<IdentityClaims> {
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, client.keys, {
      issuer: client.settings.issuer,
      audience: expect.audiences,
      algorithms: client.algorithms,
      currentDate: expect.now,
      clockTolerance: expect.skewSeconds,
      requiredClaims: ['sub', 'exp', 'iat'],
    }));
  } catch (err) {
    if (err instanceof ProviderUnreachable) throw providerUnavailable();
    throw new TokenRejected(reasonOf(err));
  }
  // jose checks `iat` only against a maximum age; a token from the future is refused here.
  if (typeof payload.iat !== 'number' || payload.iat > expect.now.getTime() / 1000 + expect.skewSeconds) throw new TokenRejected('claim_iat');
  const wanted = expect.nonceHashed ? sha256Hex(expect.nonce) : expect.nonce;
  if (typeof payload.nonce !== 'string' || !sameString(payload.nonce, wanted)) throw new TokenRejected('nonce');
  if (typeof payload.sub !== 'string' || !payload.sub || payload.sub.length > 255) throw new TokenRejected('claim_sub');
  if (typeof payload.email !== 'string' || !payload.email.includes('@') || payload.email.length > 254) throw new TokenRejected('no_email');
  return {
    subject: payload.sub,
    email: payload.email,
    // Some providers send the boolean as a string.
    emailVerified: payload.email_verified === true || payload.email_verified === 'true',
    name: typeof payload.name === 'string' && payload.name.trim() ? payload.name.trim().slice(0, 200) : null,
  };
}
