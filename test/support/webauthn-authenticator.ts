/**
 * A software WebAuthn authenticator (plus the browser's part of the ceremony) for API tests: it
 * turns the options JSON a server hands out into the response JSON a browser would post back,
 * with real P-256 keys and signatures. Deliberately written against the WebAuthn spec with
 * node:crypto only (not @simplewebauthn), so a server bug cannot be mirrored by the test double.
 */
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';

// ---------------------------------------------------------------------------------------------
// Minimal CBOR encoder (RFC 8949): just the types attestation objects and COSE keys use. Maps are
// JS Maps because plain objects would reorder integer keys, and CTAP2 wants keys in a fixed order.

type Cbor = number | string | Uint8Array | Cbor[] | Map<Cbor, Cbor>;

/** The initial byte(s) of a data item: major type plus length/value, in the shortest form. */
function cborHead(major: number, n: number): Buffer {
  const m = major << 5;
  if (n < 24) return Buffer.from([m | n]);
  if (n < 0x100) return Buffer.from([m | 24, n]);
  if (n < 0x10000) return Buffer.from([m | 25, n >> 8, n & 0xff]);
  if (n < 0x100000000) {
    const b = Buffer.alloc(5);
    b[0] = m | 26;
    b.writeUInt32BE(n, 1);
    return b;
  }
  throw new RangeError(`CBOR: ${n} is too large for this encoder`);
}

/** Encodes `v` as CBOR. */
function cbor(v: Cbor): Buffer {
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw new TypeError(`CBOR: only integers are supported, got ${v}`);
    return v >= 0 ? cborHead(0, v) : cborHead(1, -1 - v);
  }
  if (typeof v === 'string') {
    const bytes = Buffer.from(v, 'utf8');
    return Buffer.concat([cborHead(3, bytes.length), bytes]);
  }
  if (v instanceof Uint8Array) return Buffer.concat([cborHead(2, v.length), v]);
  if (Array.isArray(v)) return Buffer.concat([cborHead(4, v.length), ...v.map(cbor)]);
  const parts = [cborHead(5, v.size)];
  for (const [k, val] of v) parts.push(cbor(k), cbor(val));
  return Buffer.concat(parts);
}

// ---------------------------------------------------------------------------------------------

/** What navigator.credentials.create() takes, in its JSON form (PublicKeyCredentialCreationOptionsJSON). rp.id may be absent, as in the spec: it then defaults to the origin's host. */
export interface CreationOptionsJSON {
  rp: { id?: string; name: string };
  user: { id: string; name: string; displayName: string };
  challenge: string;
  pubKeyCredParams: { type: string; alg: number }[];
  excludeCredentials?: { id: string; type: string; transports?: string[] }[];
  authenticatorSelection?: any;
  attestation?: string;
  extensions?: any;
  timeout?: number;
}

/** What navigator.credentials.get() takes, in its JSON form (PublicKeyCredentialRequestOptionsJSON). */
export interface RequestOptionsJSON {
  challenge: string;
  rpId?: string;
  allowCredentials?: { id: string; type: string; transports?: string[] }[];
  userVerification?: string;
  timeout?: number;
}

/** A credential the authenticator holds (resident / discoverable). */
export interface StoredCredential {
  /** base64url credential id */
  id: string;
  privateKey: KeyObject;
  rpId: string;
  /** base64url, options.user.id as given at registration */
  userHandle: string;
  /** the counter of the last assertion (0 after registration) */
  signCount: number;
}

/** The JSON a browser posts after navigator.credentials.create() (RegistrationResponseJSON). */
export interface RegistrationResponseJSON {
  id: string;
  rawId: string;
  type: 'public-key';
  response: {
    clientDataJSON: string;
    attestationObject: string;
    authenticatorData: string;
    transports: string[];
    publicKeyAlgorithm: number;
    /** SubjectPublicKeyInfo DER, base64url (what getPublicKey() returns) */
    publicKey: string;
  };
  authenticatorAttachment: 'platform' | 'cross-platform';
  clientExtensionResults: { credProps: { rk: boolean } };
}

/** The JSON a browser posts after navigator.credentials.get() (AuthenticationResponseJSON). */
export interface AuthenticationResponseJSON {
  id: string;
  rawId: string;
  type: 'public-key';
  response: { clientDataJSON: string; authenticatorData: string; signature: string; userHandle: string };
  authenticatorAttachment: 'platform' | 'cross-platform';
  clientExtensionResults: Record<string, never>;
}

const ES256 = -7;
const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
const FLAG_BE = 0x08;
const FLAG_BS = 0x10;
const FLAG_AT = 0x40;

const b64url = (b: Uint8Array): string => Buffer.from(b).toString('base64url');
const sha256 = (data: Uint8Array | string): Buffer => createHash('sha256').update(data).digest();

/** A DOMException-like error: tests can match on the name a browser would reject with. */
function domError(name: string, message: string): Error {
  const e = new Error(`${name}: ${message}`);
  e.name = name;
  return e;
}

/** A software authenticator holding discoverable ES256 credentials, together with the browser that talks to it. */
export class SoftwareAuthenticator {
  /** Every credential created so far, oldest first; tests may read or tamper with them. */
  readonly credentials: StoredCredential[] = [];
  private readonly origin: string | undefined;
  private readonly aaguid: Buffer;
  private readonly transports: string[];
  private readonly backupEligible: boolean;
  private readonly backedUp: boolean;
  private readonly userVerified: boolean;

  /**
   * origin: the page's origin put in clientDataJSON (default `https://<rp id>`); aaguid: 16 bytes
   * (default zeros, as "none" attestation authenticators report); transports (default
   * ['internal'], which makes it a 'platform' authenticator, anything else 'cross-platform');
   * backupEligible/backedUp: the BE/BS flags (default false, a single-device credential; BS
   * without BE is sent as asked, which a server must refuse); userVerified: the UV flag (default true).
   */
  constructor(opts: { origin?: string; aaguid?: Buffer; transports?: string[]; backupEligible?: boolean; backedUp?: boolean; userVerified?: boolean } = {}) {
    if (opts.aaguid && opts.aaguid.length !== 16) throw new RangeError('aaguid must be 16 bytes');
    this.origin = opts.origin;
    this.aaguid = opts.aaguid ?? Buffer.alloc(16);
    this.transports = opts.transports ?? ['internal'];
    this.backupEligible = opts.backupEligible ?? false;
    this.backedUp = opts.backedUp ?? false;
    this.userVerified = opts.userVerified ?? true;
  }

  private get attachment(): 'platform' | 'cross-platform' {
    return this.transports.includes('internal') ? 'platform' : 'cross-platform';
  }

  /**
   * navigator.credentials.create(): a RegistrationResponseJSON (P-256 / ES256 key, attestation
   * "none", discoverable). Overrides falsify what a genuine browser/authenticator would send (the
   * clientData origin/challenge/type, the rpId hashed into authenticatorData, the UP/UV flags);
   * the credential is stored under the options' rp id all the same.
   */
  create(
    options: CreationOptionsJSON,
    overrides: { origin?: string; rpId?: string; challenge?: string; type?: string; userPresent?: boolean; userVerified?: boolean } = {},
  ): RegistrationResponseJSON {
    const rpId = options.rp.id ?? this.hostOfOrigin('create() options without rp.id');
    const origin = overrides.origin ?? this.origin ?? `https://${rpId}`;
    if (!options.pubKeyCredParams.some((p) => p.type === 'public-key' && p.alg === ES256)) {
      throw domError('NotSupportedError', 'pubKeyCredParams does not offer ES256 (-7), the only algorithm this authenticator has');
    }
    // A real authenticator refuses to make a second credential for an account it already holds one of.
    const held = new Set(this.credentials.filter((c) => c.rpId === rpId).map((c) => c.id));
    if ((options.excludeCredentials ?? []).some((c) => held.has(c.id))) {
      throw domError('InvalidStateError', `the authenticator already holds one of excludeCredentials for rp "${rpId}"`);
    }

    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const credId = randomBytes(32);
    const jwk = publicKey.export({ format: 'jwk' });
    const coseKey = cbor(
      new Map<Cbor, Cbor>([
        [1, 2], // kty: EC2
        [3, ES256], // alg
        [-1, 1], // crv: P-256
        [-2, Buffer.from(jwk.x!, 'base64url')],
        [-3, Buffer.from(jwk.y!, 'base64url')],
      ]),
    );
    const credIdLen = Buffer.alloc(2);
    credIdLen.writeUInt16BE(credId.length);
    const authData = Buffer.concat([
      this.authDataHead(overrides.rpId ?? rpId, FLAG_AT, overrides, 0),
      this.aaguid,
      credIdLen,
      credId,
      coseKey,
    ]);
    const attestationObject = cbor(
      new Map<Cbor, Cbor>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]),
    );
    const clientDataJSON = clientData(overrides.type ?? 'webauthn.create', overrides.challenge ?? options.challenge, origin);

    const id = b64url(credId);
    this.credentials.push({ id, privateKey, rpId, userHandle: options.user.id, signCount: 0 });
    return {
      id,
      rawId: id,
      type: 'public-key',
      response: {
        clientDataJSON: b64url(clientDataJSON),
        attestationObject: b64url(attestationObject),
        authenticatorData: b64url(authData),
        transports: [...this.transports],
        publicKeyAlgorithm: ES256,
        publicKey: b64url(publicKey.export({ format: 'der', type: 'spki' })),
      },
      authenticatorAttachment: this.attachment,
      clientExtensionResults: { credProps: { rk: true } },
    };
  }

  /**
   * navigator.credentials.get(): an AuthenticationResponseJSON signed by the chosen credential
   * (overrides.credentialId, else the first of allowCredentials it holds for the rp, else, for an
   * empty allowCredentials, its first credential for the rp: discoverable). Increments the stored
   * signCount by 1, unless overrides.signCount is given: that value is sent and nothing is stored.
   * overrides.privateKey signs with another key; overrides.rpId changes only the hash in
   * authenticatorData, not which credential is chosen.
   */
  get(
    options: RequestOptionsJSON,
    overrides: {
      origin?: string;
      rpId?: string;
      challenge?: string;
      credentialId?: string;
      signCount?: number;
      userVerified?: boolean;
      userPresent?: boolean;
      type?: string;
      privateKey?: KeyObject;
    } = {},
  ): AuthenticationResponseJSON {
    const rpId = options.rpId ?? this.hostOfOrigin('get() options without rpId');
    const origin = overrides.origin ?? this.origin ?? `https://${rpId}`;
    const credential = this.choose(rpId, options.allowCredentials ?? [], overrides.credentialId);

    let signCount: number;
    if (overrides.signCount !== undefined) {
      signCount = overrides.signCount;
    } else {
      signCount = credential.signCount + 1;
      credential.signCount = signCount;
    }
    const authData = this.authDataHead(overrides.rpId ?? rpId, 0, overrides, signCount);
    const clientDataJSON = clientData(overrides.type ?? 'webauthn.get', overrides.challenge ?? options.challenge, origin);
    // The signature covers the authenticator data and the hash of the exact clientDataJSON bytes sent.
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientDataJSON)]), overrides.privateKey ?? credential.privateKey);

    return {
      id: credential.id,
      rawId: credential.id,
      type: 'public-key',
      response: {
        clientDataJSON: b64url(clientDataJSON),
        authenticatorData: b64url(authData),
        signature: b64url(signature),
        userHandle: credential.userHandle,
      },
      authenticatorAttachment: this.attachment,
      clientExtensionResults: {},
    };
  }

  private choose(rpId: string, allow: { id: string }[], wanted: string | undefined): StoredCredential {
    const mine = this.credentials.filter((c) => c.rpId === rpId);
    let found: StoredCredential | undefined;
    if (wanted !== undefined) {
      found = mine.find((c) => c.id === wanted);
    } else if (allow.length > 0) {
      found = allow.map((a) => mine.find((c) => c.id === a.id)).find((c) => c !== undefined);
    } else {
      found = mine[0];
    }
    if (!found) {
      const what =
        wanted !== undefined
          ? `credential ${wanted} is not held`
          : allow.length
            ? `none of allowCredentials [${allow.map((a) => a.id).join(', ')}] is held`
            : 'no discoverable credential is held';
      throw new Error(`SoftwareAuthenticator: ${what} for rp "${rpId}" (it holds ${mine.length} for that rp, ${this.credentials.length} in all)`);
    }
    return found;
  }

  /** rpIdHash | flags | signCount: the fixed 37-byte start of authenticator data. */
  private authDataHead(rpId: string, extraFlags: number, o: { userPresent?: boolean; userVerified?: boolean }, signCount: number): Buffer {
    const flags =
      ((o.userPresent ?? true) ? FLAG_UP : 0) |
      ((o.userVerified ?? this.userVerified) ? FLAG_UV : 0) |
      (this.backupEligible ? FLAG_BE : 0) |
      (this.backedUp ? FLAG_BS : 0) |
      extraFlags;
    const count = Buffer.alloc(4);
    count.writeUInt32BE(signCount);
    return Buffer.concat([sha256(rpId), Buffer.from([flags]), count]);
  }

  /** Like a browser, the rp id defaults to the page's host; without a configured origin there is none. */
  private hostOfOrigin(what: string): string {
    if (!this.origin) throw new Error(`SoftwareAuthenticator: ${what} needs the constructor's origin option`);
    return new URL(this.origin).hostname;
  }
}

/** The collected client data, serialised like browsers do (member order type, challenge, origin, crossOrigin). */
function clientData(type: string, challenge: string, origin: string): Buffer {
  return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }), 'utf8');
}
