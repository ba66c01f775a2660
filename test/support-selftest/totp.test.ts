/**
 * The test TOTP generator against the RFC's own vectors: an independent check that does not rely on
 * the `otpauth` package the server uses, nor on any tool being installed.
 */
import { base32Decode, totp, totpAt, totpFromKey } from '../support/totp';

describe('base32Decode', () => {
  it('decodes the RFC 4648 §10 vectors, padded or not, in either case, with spaces', () => {
    const vectors: [string, string][] = [
      ['', ''],
      ['f', 'MY======'],
      ['fo', 'MZXQ===='],
      ['foo', 'MZXW6==='],
      ['foob', 'MZXW6YQ='],
      ['fooba', 'MZXW6YTB'],
      ['foobar', 'MZXW6YTBOI======'],
    ];
    for (const [plain, encoded] of vectors) {
      expect(base32Decode(encoded).toString('latin1')).toBe(plain);
      expect(base32Decode(encoded.replace(/=/g, '')).toString('latin1')).toBe(plain);
      expect(base32Decode(encoded.toLowerCase()).toString('latin1')).toBe(plain);
    }
    expect(base32Decode('MZXW 6YTB OI').toString('latin1')).toBe('foobar');
  });

  it('refuses characters outside the alphabet', () => {
    expect(() => base32Decode('MZXW1')).toThrow('base32Decode: invalid character "1"');
  });
});

describe('totpFromKey', () => {
  // RFC 6238 Appendix B: 8 digits, 30 s steps, one seed per hash (the ASCII digits repeated to the hash's size).
  const keys = {
    sha1: Buffer.from('12345678901234567890', 'ascii'),
    sha256: Buffer.from('12345678901234567890123456789012', 'ascii'),
    sha512: Buffer.from('1234567890123456789012345678901234567890123456789012345678901234', 'ascii'),
  } as const;
  const vectors: [number, string, string, string][] = [
    // unix seconds, SHA1, SHA256, SHA512
    [59, '94287082', '46119246', '90693936'],
    [1111111109, '07081804', '68084774', '25091201'],
    [1111111111, '14050471', '67062674', '99943326'],
    [1234567890, '89005924', '91819424', '93441116'],
    [2000000000, '69279037', '90698825', '38618901'],
    [20000000000, '65353130', '77737706', '47863826'],
  ];

  it.each(vectors)('gives the RFC 6238 codes at %i s', (seconds, sha1, sha256, sha512) => {
    const at = seconds * 1000;
    expect(totpFromKey(keys.sha1, at, { digits: 8 })).toBe(sha1);
    expect(totpFromKey(keys.sha1, at, { digits: 8, algorithm: 'sha1', stepSeconds: 30 })).toBe(sha1);
    expect(totpFromKey(keys.sha256, at, { digits: 8, algorithm: 'sha256' })).toBe(sha256);
    expect(totpFromKey(keys.sha512, at, { digits: 8, algorithm: 'sha512' })).toBe(sha512);
    // A Date is the same instant.
    expect(totpFromKey(keys.sha1, new Date(at), { digits: 8 })).toBe(sha1);
  });
});

describe('totp and totpAt', () => {
  // base32 of the ASCII seed "12345678901234567890" of the RFC 6238 SHA1 vectors.
  const secret = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';

  it('take a base32 secret and default to 6 digits (the RFC codes truncated to their last 6)', () => {
    expect(base32Decode(secret).toString('ascii')).toBe('12345678901234567890');
    expect(totp(secret, 59_000)).toBe('287082');
    expect(totp(secret, 1111111109_000)).toBe('081804');
    expect(totp(secret.toLowerCase(), new Date(1234567890_000))).toBe('005924');
    expect(totp(secret, 20000000000_000, { digits: 8 })).toBe('65353130');
  });

  it('change code only at 30 s step boundaries', () => {
    const stepStart = 1111111110_000; // a multiple of 30 s
    expect(totp(secret, stepStart)).toBe(totp(secret, stepStart + 29_999));
    expect(totp(secret, stepStart - 1)).toBe('081804'); // 1111111109 s, the step before
    expect(totp(secret, stepStart)).toBe('050471'); // 1111111111 s is in this step
  });

  it('default to now', () => {
    const before = totp(secret, Date.now());
    const code = totp(secret);
    const after = totp(secret, Date.now());
    expect([before, after]).toContain(code);
  });

  it('give the neighbouring windows with totpAt', () => {
    const at = 1111111111_000;
    expect(totpAt(secret, at, 0)).toBe('050471');
    expect(totpAt(secret, at, -1)).toBe('081804');
    expect(totpAt(secret, new Date(at), -1)).toBe(totp(secret, at - 30_000));
    expect(totpAt(secret, at, 1)).toBe(totp(secret, at + 30_000));
    expect(totpAt(secret, at, 1)).not.toBe(totpAt(secret, at, 0));
  });
});
