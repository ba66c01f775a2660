// Authenticator-app secrets at rest: AES-256-GCM under MFA_ENCRYPTION_KEY, with the user id as
// associated data, so a ciphertext copied onto another user's row does not decrypt. A database
// dump alone does not give the secrets away (the key lives in configuration, not the database).
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

// Layout: version (1) | iv (12) | tag (16) | ciphertext. The version byte leaves room for a key rotation.
const VERSION = 1;

export function sealSecret(key: Buffer, userId: string, secret: Buffer): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(userId));
  const body = Buffer.concat([cipher.update(secret), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body]);
}

/** The secret; throws when the key or the user is not the one it was sealed with. */
export function openSecret(key: Buffer, userId: string, sealed: Buffer): Buffer {
  if (sealed[0] !== VERSION) throw new Error(`unknown secret-box version ${sealed[0]}`);
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(1, 13));
  decipher.setAAD(Buffer.from(userId));
  decipher.setAuthTag(sealed.subarray(13, 29));
  return Buffer.concat([decipher.update(sealed.subarray(29)), decipher.final()]);
}
