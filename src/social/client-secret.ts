// provider_b's client secret (DESIGN 2): not a shared string but an ES256 JWT signed with the
// team's key — `iss` the team id, `sub` the client id, `aud` the issuer, `kid` the key id — as
// Sign in with Apple defines it. Made synchronously with node:crypto because openid-client's
// client authentication hook is synchronous; reused until it is close to expiry.
import { sign, type KeyObject } from 'node:crypto';

const LIFETIME_SECONDS = 3600;
const RENEW_BEFORE_SECONDS = 600;

const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

export function es256ClientSecret(input: { teamId: string; keyId: string; key: KeyObject; clientId: string; audience: string }, nowSeconds: number): string {
  const header = b64({ alg: 'ES256', kid: input.keyId, typ: 'JWT' });
  const claims = b64({ iss: input.teamId, sub: input.clientId, aud: input.audience, iat: nowSeconds, exp: nowSeconds + LIFETIME_SECONDS });
  // JWS wants the raw r||s signature (IEEE P1363), not DER.
  const signature = sign('sha256', Buffer.from(`${header}.${claims}`), { key: input.key, dsaEncoding: 'ieee-p1363' });
  return `${header}.${claims}.${signature.toString('base64url')}`;
}

/** One secret at a time, renewed ten minutes before it expires. */
export class ClientSecretCache {
  private current: { value: string; expiresAt: number } | null = null;

  constructor(private readonly make: (nowSeconds: number) => string) {}

  get(nowMs = Date.now()): string {
    const now = Math.floor(nowMs / 1000);
    if (!this.current || this.current.expiresAt - RENEW_BEFORE_SECONDS <= now) {
      this.current = { value: this.make(now), expiresAt: now + LIFETIME_SECONDS };
    }
    return this.current.value;
  }
}
