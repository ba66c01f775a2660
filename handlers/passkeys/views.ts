// API shapes of passkeys and passkey ceremonies.
import type { components } from '../../codegen/api-types';
import type { Ceremony, PasskeyRow } from '../../src/passkeys/service';

type ApiPasskey = components['schemas']['Passkey'];

export function toApiPasskey(p: PasskeyRow): ApiPasskey {
  return {
    id: p.id,
    name: p.name,
    created_at: p.createdAt.toISOString(),
    last_used_at: p.lastUsedAt?.toISOString() ?? null,
    transports: p.transports,
    backed_up: p.backedUp,
  };
}

type RequestCeremony = components['schemas']['PasskeyCeremony'];
type CreationCeremony = components['schemas']['PasskeyRegistrationCeremony'];

// The options are @simplewebauthn's JSON, passed to the browser as they are. Its types are the
// same shapes as the contract's but without index signatures, hence the casts (the contract
// tests check every answer against the schema).

/** `{ceremony_token, expires_at, options}` for navigator.credentials.get(). */
export function ceremonyReply(c: Ceremony<unknown>): RequestCeremony {
  return { ceremony_token: c.token, expires_at: c.expiresAt.toISOString(), options: c.options as RequestCeremony['options'] };
}

/** `{ceremony_token, expires_at, options}` for navigator.credentials.create(). */
export function creationCeremonyReply(c: Ceremony<unknown>): CreationCeremony {
  return { ceremony_token: c.token, expires_at: c.expiresAt.toISOString(), options: c.options as CreationCeremony['options'] };
}
