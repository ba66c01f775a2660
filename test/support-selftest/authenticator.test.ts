/**
 * The software authenticator's responses must be what @simplewebauthn/server (the server's
 * verifier) accepts from a real browser, and its falsified responses must be refused for the
 * reason the test meant, or API tests built on it would prove nothing.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type WebAuthnCredential,
} from '@simplewebauthn/server';
import { SoftwareAuthenticator } from '../support/webauthn-authenticator';

describe.each([
  { rpID: 'localhost', origin: 'http://localhost:3000' },
  { rpID: 'app.example.com', origin: 'https://app.example.com' },
])('SoftwareAuthenticator for rp $rpID at $origin', ({ rpID, origin }) => {
  const userID = randomBytes(16);

  async function register(authenticator: SoftwareAuthenticator) {
    const options = await generateRegistrationOptions({ rpName: 'Test', rpID, userName: 'alice@example.com', userID });
    const response = authenticator.create(options);
    const result = await verifyRegistrationResponse({ response, expectedChallenge: options.challenge, expectedOrigin: origin, expectedRPID: rpID });
    if (!result.verified) throw new Error('registration did not verify');
    return { options, response, info: result.registrationInfo };
  }

  /** Authentication options for `credential`, and the verification of `response` against them. */
  async function authOptions(credential: WebAuthnCredential) {
    const options = await generateAuthenticationOptions({ rpID, allowCredentials: [{ id: credential.id, transports: credential.transports }] });
    const verify = (response: Parameters<typeof verifyAuthenticationResponse>[0]['response']) =>
      verifyAuthenticationResponse({ response, expectedChallenge: options.challenge, expectedOrigin: origin, expectedRPID: rpID, credential });
    return { options, verify };
  }

  it('registers: fmt none, counter 0, single-device and not backed up by default, user verified', async () => {
    const authenticator = new SoftwareAuthenticator({ origin });
    const { options, response, info } = await register(authenticator);
    expect(info.fmt).toBe('none');
    expect(info.credential.counter).toBe(0);
    expect(info.credential.id).toBe(response.id);
    expect(info.credential.transports).toEqual(['internal']);
    expect(info.credentialDeviceType).toBe('singleDevice');
    expect(info.credentialBackedUp).toBe(false);
    expect(info.userVerified).toBe(true);
    expect(info.aaguid).toBe('00000000-0000-0000-0000-000000000000');
    expect(info.origin).toBe(origin);
    expect(info.rpID).toBe(rpID);
    expect(response.authenticatorAttachment).toBe('platform');
    expect(authenticator.credentials).toEqual([expect.objectContaining({ id: response.id, rpId: rpID, userHandle: options.user.id, signCount: 0 })]);
  });

  it('reports the backup flags and the aaguid it was given', async () => {
    const aaguid = Buffer.from('0123456789abcdef0123456789abcdef', 'hex');
    const { info, response } = await register(new SoftwareAuthenticator({ origin, backupEligible: true, backedUp: true, aaguid, transports: ['usb', 'nfc'] }));
    expect(info.credentialDeviceType).toBe('multiDevice');
    expect(info.credentialBackedUp).toBe(true);
    expect(info.aaguid).toBe('01234567-89ab-cdef-0123-456789abcdef');
    expect(info.credential.transports).toEqual(['usb', 'nfc']);
    expect(response.authenticatorAttachment).toBe('cross-platform');
  });

  it('has registrations with a wrong origin, challenge, rp id or type refused', async () => {
    const options = await generateRegistrationOptions({ rpName: 'Test', rpID, userName: 'bob', userID });
    const authenticator = new SoftwareAuthenticator({ origin });
    const verify = (response: ReturnType<SoftwareAuthenticator['create']>) =>
      verifyRegistrationResponse({ response, expectedChallenge: options.challenge, expectedOrigin: origin, expectedRPID: rpID });
    await expect(verify(authenticator.create(options, { origin: 'https://evil.example' }))).rejects.toThrow(
      `Unexpected registration response origin "https://evil.example", expected "${origin}"`,
    );
    await expect(verify(authenticator.create(options, { challenge: 'AAAA' }))).rejects.toThrow('Unexpected registration response challenge "AAAA"');
    await expect(verify(authenticator.create(options, { rpId: 'evil.example' }))).rejects.toThrow('Unexpected RP ID hash');
    await expect(verify(authenticator.create(options, { type: 'webauthn.get' }))).rejects.toThrow('Unexpected registration response type: webauthn.get');
    await expect(verify(authenticator.create(options, { userVerified: false }))).rejects.toThrow('User verification was required, but user could not be verified');
    await expect(verify(authenticator.create(options, { userPresent: false }))).rejects.toThrow('User presence was required, but user was not present');
  });

  it('refuses to register again for an rp when excludeCredentials names a credential it holds', async () => {
    const authenticator = new SoftwareAuthenticator({ origin });
    const { response } = await register(authenticator);
    const again = await generateRegistrationOptions({ rpName: 'Test', rpID, userName: 'alice@example.com', userID, excludeCredentials: [{ id: response.id }] });
    expect(() => authenticator.create(again)).toThrow('InvalidStateError');
    // A credential id it does not hold does not stop it.
    const other = await generateRegistrationOptions({ rpName: 'Test', rpID, userName: 'alice@example.com', userID, excludeCredentials: [{ id: 'AAAAAAAA' }] });
    expect(authenticator.create(other).id).not.toBe(response.id);
  });

  it('authenticates with counter 1 then 2, and returns the user handle given at registration', async () => {
    const authenticator = new SoftwareAuthenticator({ origin });
    const { options: regOptions, info } = await register(authenticator);
    const first = await authOptions(info.credential);
    const r1 = authenticator.get(first.options);
    const v1 = await first.verify(r1);
    expect(v1.verified).toBe(true);
    expect(v1.authenticationInfo.newCounter).toBe(1);
    expect(v1.authenticationInfo.credentialID).toBe(info.credential.id);
    expect(v1.authenticationInfo.userVerified).toBe(true);
    expect(r1.response.userHandle).toBe(regOptions.user.id);
    expect(Buffer.from(r1.response.userHandle, 'base64url')).toEqual(userID);

    const second = await authOptions({ ...info.credential, counter: 1 });
    const v2 = await second.verify(authenticator.get(second.options));
    expect(v2.verified).toBe(true);
    expect(v2.authenticationInfo.newCounter).toBe(2);
    expect(authenticator.credentials[0]!.signCount).toBe(2);
  });

  it('has assertions with a wrong origin, challenge, rp id, key, counter or missing UV refused', async () => {
    const authenticator = new SoftwareAuthenticator({ origin });
    const { info } = await register(authenticator);
    const credential = { ...info.credential, counter: 2 };
    const { options, verify } = await authOptions(credential);

    await expect(verify(authenticator.get(options, { origin: 'https://evil.example' }))).rejects.toThrow(
      `Unexpected authentication response origin "https://evil.example", expected "${origin}"`,
    );
    await expect(verify(authenticator.get(options, { challenge: 'AAAA' }))).rejects.toThrow(
      `Unexpected authentication response challenge "AAAA", expected "${options.challenge}"`,
    );
    await expect(verify(authenticator.get(options, { rpId: 'evil.example' }))).rejects.toThrow('Unexpected RP ID hash');
    await expect(verify(authenticator.get(options, { type: 'webauthn.create' }))).rejects.toThrow('Unexpected authentication response type: webauthn.create');
    await expect(verify(authenticator.get(options, { userVerified: false }))).rejects.toThrow('User verification required, but user could not be verified');
    await expect(verify(authenticator.get(options, { userPresent: false }))).rejects.toThrow('User not present during authentication');
    // A counter that does not go up (backwards, or equal) is an error, not `verified: false`.
    await expect(verify(authenticator.get(options, { signCount: 1 }))).rejects.toThrow('Response counter value 1 was lower than expected 2');
    await expect(verify(authenticator.get(options, { signCount: 2 }))).rejects.toThrow('Response counter value 2 was lower than expected 2');
    // A signature by another key is `verified: false`, not an error.
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const forged = await verify(authenticator.get(options, { privateKey, signCount: 10 }));
    expect(forged.verified).toBe(false);
    // A sound response with a higher counter still verifies: the refusals above were for their one defect each.
    const ok = await verify(authenticator.get(options, { signCount: 3 }));
    expect(ok.verified).toBe(true);
  });

  it('accepts UV missing when the server does not require it (second factor with userVerification discouraged)', async () => {
    const authenticator = new SoftwareAuthenticator({ origin, userVerified: false });
    const regOptions = await generateRegistrationOptions({ rpName: 'Test', rpID, userName: 'carol', userID });
    const reg = await verifyRegistrationResponse({
      response: authenticator.create(regOptions),
      expectedChallenge: regOptions.challenge,
      expectedOrigin: origin,
      expectedRPID: rpID,
      requireUserVerification: false,
    });
    if (!reg.verified) throw new Error('registration did not verify');
    expect(reg.registrationInfo.userVerified).toBe(false);
    const options = await generateAuthenticationOptions({ rpID, userVerification: 'discouraged', allowCredentials: [{ id: reg.registrationInfo.credential.id }] });
    const result = await verifyAuthenticationResponse({
      response: authenticator.get(options),
      expectedChallenge: options.challenge,
      expectedOrigin: origin,
      expectedRPID: rpID,
      credential: reg.registrationInfo.credential,
      requireUserVerification: false,
    });
    expect(result.verified).toBe(true);
    expect(result.authenticationInfo.userVerified).toBe(false);
  });

  it('answers a discoverable request (no allowCredentials) with its credential for the rp and the user handle', async () => {
    const authenticator = new SoftwareAuthenticator({ origin });
    // A credential for another rp first: it must not be the one chosen.
    authenticator.create(await generateRegistrationOptions({ rpName: 'Other', rpID: 'other.example', userName: 'x', userID: randomBytes(16) }), {
      origin: 'https://other.example',
    });
    const { options: regOptions, info } = await register(authenticator);
    const options = await generateAuthenticationOptions({ rpID });
    expect(options.allowCredentials).toBeUndefined();
    const response = authenticator.get(options);
    expect(response.id).toBe(info.credential.id);
    expect(response.response.userHandle).toBe(regOptions.user.id);
    const result = await verifyAuthenticationResponse({ response, expectedChallenge: options.challenge, expectedOrigin: origin, expectedRPID: rpID, credential: info.credential });
    expect(result.verified).toBe(true);
    expect(result.authenticationInfo.newCounter).toBe(1);
  });

  it('chooses the first allowed credential it holds, or the one asked for, and says so when it holds none', async () => {
    const authenticator = new SoftwareAuthenticator({ origin });
    const a = (await register(authenticator)).info.credential;
    const b = (await register(authenticator)).info.credential;
    const both = await generateAuthenticationOptions({ rpID, allowCredentials: [{ id: 'AAAAAAAA' }, { id: b.id }, { id: a.id }] });
    expect(authenticator.get(both).id).toBe(b.id);
    expect(authenticator.get(both, { credentialId: a.id }).id).toBe(a.id);
    const unknown = await generateAuthenticationOptions({ rpID, allowCredentials: [{ id: 'AAAAAAAA' }] });
    expect(() => authenticator.get(unknown)).toThrow(`SoftwareAuthenticator: none of allowCredentials [AAAAAAAA] is held for rp "${rpID}"`);
    expect(() => new SoftwareAuthenticator({ origin }).get(both)).toThrow('SoftwareAuthenticator: none of allowCredentials');
    expect(() => authenticator.get({ challenge: 'AAAA', rpId: 'elsewhere.example' })).toThrow('SoftwareAuthenticator: no discoverable credential is held for rp "elsewhere.example"');
  });
});
