// The OIDC peer is a real provider: its ID tokens verify with jose against its own JWKS, its
// callbacks carry what a browser would carry, and Apple-style client secrets are really checked.
import { createHash, randomBytes } from 'node:crypto';
import {
  createRemoteJWKSet, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, jwtVerify, SignJWT,
} from 'jose';
import {
  appleStyleClientSecret, callbackParams, type OidcPeer, type PeerClient, startOidcPeer,
} from '../support/oidc-peer';

const A_CALLBACK = 'https://api.example.test/v1/auth/provider_a/callback';
const B_CALLBACK = 'https://api.example.test/v1/auth/provider_b/callback';
const clientA: PeerClient = { clientId: 'api-client-a', clientSecret: 'a-static-secret', redirectUris: [A_CALLBACK] };

const b64url = (bytes: Buffer): string => bytes.toString('base64url');

function authorizationUrl(peer: OidcPeer, params: Record<string, string>): { url: string; state: string; verifier: string } {
  const state = b64url(randomBytes(12));
  const verifier = b64url(randomBytes(32));
  const url = new URL('/auth', peer.issuer);
  url.search = new URLSearchParams({
    response_type: 'code',
    scope: 'openid email profile',
    state,
    code_challenge: b64url(createHash('sha256').update(verifier).digest()),
    code_challenge_method: 'S256',
    ...params,
  }).toString();
  return { url: url.href, state, verifier };
}

async function token(peer: OidcPeer, form: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${peer.issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', ...form }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function jwksKids(peer: OidcPeer): Promise<string[]> {
  const discovery = (await (await fetch(`${peer.issuer}/.well-known/openid-configuration`)).json()) as { jwks_uri: string };
  const jwks = (await (await fetch(discovery.jwks_uri)).json()) as { keys: { kid: string }[] };
  return jwks.keys.map((k) => k.kid);
}

describe('oidc peer, shape get (Google-like)', () => {
  let peer: OidcPeer;
  beforeAll(async () => {
    peer = await startOidcPeer({ shape: 'get', clients: [clientA] });
    await peer.setAccount('alice-sub', { email: 'alice@example.test', email_verified: true, name: 'Alice Example' });
  });
  afterAll(async () => {
    await peer?.close();
  });

  it('signs the user in, redirects back with code, state and iss, and the code yields a verifiable ID token', async () => {
    expect(peer.issuer).toBe(`http://127.0.0.1:${peer.port}`);
    const { url, state, verifier } = authorizationUrl(peer, { client_id: clientA.clientId, redirect_uri: A_CALLBACK, nonce: 'nonce-1' });

    const callback = await peer.authorize(url, { sub: 'alice-sub' });
    expect(callback.method).toBe('GET');
    expect(callback.url.startsWith(`${A_CALLBACK}?`)).toBe(true);
    const params = callbackParams(callback);
    expect(params).toEqual({ code: expect.any(String), state, iss: peer.issuer });

    const res = await token(peer, {
      code: params.code!, redirect_uri: A_CALLBACK, code_verifier: verifier, client_id: clientA.clientId, client_secret: clientA.clientSecret,
    });
    expect(res.status).toBe(200);
    const jwks = createRemoteJWKSet(new URL(`${peer.issuer}/jwks`));
    const { payload, protectedHeader } = await jwtVerify(res.body.id_token as string, jwks, { issuer: peer.issuer, audience: clientA.clientId });
    expect(protectedHeader).toMatchObject({ alg: 'RS256', kid: peer.signingKey.kid });
    expect(payload).toMatchObject({
      sub: 'alice-sub', nonce: 'nonce-1', email: 'alice@example.test', email_verified: true, name: 'Alice Example',
    });
  });

  it('refuses the code without the PKCE verifier it was issued for', async () => {
    const { url } = authorizationUrl(peer, { client_id: clientA.clientId, redirect_uri: A_CALLBACK, nonce: 'n' });
    const { code } = callbackParams(await peer.authorize(url, { sub: 'alice-sub' }));
    const res = await token(peer, {
      code: code!, redirect_uri: A_CALLBACK, code_verifier: b64url(randomBytes(32)), client_id: clientA.clientId, client_secret: clientA.clientSecret,
    });
    expect(res).toEqual({ status: 400, body: expect.objectContaining({ error: 'invalid_grant' }) });
  });

  it('takes the static secret by client_secret_basic too, and refuses a wrong one', async () => {
    const exchange = async (secret: string): Promise<Response> => {
      const { url, verifier } = authorizationUrl(peer, { client_id: clientA.clientId, redirect_uri: A_CALLBACK, nonce: 'n' });
      const { code } = callbackParams(await peer.authorize(url, { sub: 'alice-sub' }));
      return fetch(`${peer.issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${clientA.clientId}:${secret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'authorization_code', code: code!, redirect_uri: A_CALLBACK, code_verifier: verifier }),
      });
    };
    expect((await exchange(clientA.clientSecret)).status).toBe(200);
    const refused = await exchange('not-the-secret');
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ error: 'invalid_client' });
  });

  it('a cancelled sign-in comes back as error=access_denied with the state', async () => {
    const { url, state } = authorizationUrl(peer, { client_id: clientA.clientId, redirect_uri: A_CALLBACK, nonce: 'n' });
    const callback = await peer.authorize(url, { cancel: true });
    expect(callback.method).toBe('GET');
    expect(callback.url.startsWith(`${A_CALLBACK}?`)).toBe(true);
    expect(callbackParams(callback)).toMatchObject({ error: 'access_denied', state, iss: peer.issuer });
  });

  it('issueIdToken gives a verifiable token with the nonce; unknown subs have no email claims', async () => {
    const jwks = createRemoteJWKSet(new URL(`${peer.issuer}/jwks`));
    const idToken = await peer.issueIdToken({
      clientId: clientA.clientId, clientSecret: clientA.clientSecret, redirectUri: A_CALLBACK, nonce: 'app-nonce', sub: 'alice-sub',
    });
    const { payload } = await jwtVerify(idToken, jwks, { issuer: peer.issuer, audience: clientA.clientId });
    expect(payload).toMatchObject({ sub: 'alice-sub', nonce: 'app-nonce', email: 'alice@example.test' });

    const stranger = await peer.issueIdToken({
      clientId: clientA.clientId, clientSecret: clientA.clientSecret, redirectUri: A_CALLBACK, nonce: 'n2', sub: 'nobody-sub',
    });
    const { payload: strangerClaims } = await jwtVerify(stranger, jwks, { issuer: peer.issuer, audience: clientA.clientId });
    expect(strangerClaims.sub).toBe('nobody-sub');
    expect(strangerClaims).not.toHaveProperty('email');
    expect(strangerClaims).not.toHaveProperty('name');
  });

  it('signingKey is the private half of the published key: tokens signed with it verify against the JWKS', async () => {
    const key = peer.signingKey;
    const notification = await new SignJWT({ events: {} })
      .setProtectedHeader({ alg: key.alg, kid: key.kid })
      .setIssuer(peer.issuer).setAudience(clientA.clientId).setIssuedAt()
      .sign(await importJWK(key, key.alg));
    const { payload } = await jwtVerify(notification, createRemoteJWKSet(new URL(`${peer.issuer}/jwks`)), { issuer: peer.issuer });
    expect(payload.aud).toBe(clientA.clientId);
  });

  it('rotateKeys keeps the issuer and accounts but publishes and signs with a new kid', async () => {
    const before = peer.signingKey.kid;
    expect(await jwksKids(peer)).toEqual([before]);
    const issuer = peer.issuer;

    await peer.rotateKeys();

    expect(peer.issuer).toBe(issuer);
    const after = peer.signingKey.kid;
    expect(after).not.toBe(before);
    expect(await jwksKids(peer)).toEqual([after]);
    const idToken = await peer.issueIdToken({
      clientId: clientA.clientId, clientSecret: clientA.clientSecret, redirectUri: A_CALLBACK, nonce: 'after-rotation', sub: 'alice-sub',
    });
    expect(decodeProtectedHeader(idToken).kid).toBe(after);
    const { payload } = await jwtVerify(idToken, createRemoteJWKSet(new URL(`${issuer}/jwks`)), { issuer, audience: clientA.clientId });
    expect(payload).toMatchObject({ nonce: 'after-rotation', email: 'alice@example.test', name: 'Alice Example' });
  });
});

describe('oidc peer, shape form_post with an Apple-style client secret', () => {
  const teamId = 'TEAM123456';
  const keyId = 'KEY1234567';
  let peer: OidcPeer;
  let teamPrivateJwk: Awaited<ReturnType<typeof exportJWK>>;
  let clientB: PeerClient;

  beforeAll(async () => {
    const team = await generateKeyPair('ES256', { extractable: true });
    teamPrivateJwk = await exportJWK(team.privateKey);
    clientB = {
      clientId: 'test.example.api',
      clientSecret: 'b-static-secret',
      redirectUris: [B_CALLBACK],
      appleStyleSecret: { teamId, keyId, publicJwk: await exportJWK(team.publicKey) },
    };
    peer = await startOidcPeer({ shape: 'form_post', clients: [clientB] });
    await peer.setAccount('bob-sub', { email: 'bob@privaterelay.example.test', email_verified: true });
  });
  afterAll(async () => {
    await peer?.close();
  });

  async function secretSignedBy(privateJwk: Parameters<typeof importJWK>[0], claims: { kid?: string; exp?: number; iat?: number; aud?: string } = {}): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: claims.kid ?? keyId })
      .setIssuer(teamId).setSubject(clientB.clientId).setAudience(claims.aud ?? peer.issuer)
      .setIssuedAt(claims.iat ?? now).setExpirationTime(claims.exp ?? now + 300)
      .sign(await importJWK(privateJwk, 'ES256'));
  }

  it('answers with an auto-submitted form; the code is exchanged only with a valid team-signed client secret', async () => {
    const { url, state, verifier } = authorizationUrl(peer, {
      client_id: clientB.clientId, redirect_uri: B_CALLBACK, nonce: 'nonce-b', response_mode: 'form_post', scope: 'openid email name',
    });
    const callback = await peer.authorize(url, { sub: 'bob-sub' });
    expect(callback).toEqual({ method: 'POST', url: B_CALLBACK, form: { code: expect.any(String), state, iss: peer.issuer } });

    const exchange = (clientSecret: string): ReturnType<typeof token> => token(peer, {
      code: callback.form!.code!, redirect_uri: B_CALLBACK, code_verifier: verifier, client_id: clientB.clientId, client_secret: clientSecret,
    });
    const other = await exportJWK((await generateKeyPair('ES256', { extractable: true })).privateKey);
    const now = Math.floor(Date.now() / 1000);
    const refused = [
      await secretSignedBy(other),
      clientB.clientSecret,
      await secretSignedBy(teamPrivateJwk, { kid: 'OTHERKEYID' }),
      await secretSignedBy(teamPrivateJwk, { exp: now - 60, iat: now - 360 }),
      await secretSignedBy(teamPrivateJwk, { iat: now + 600, exp: now + 900 }),
      await secretSignedBy(teamPrivateJwk, { aud: 'https://appleid.apple.com' }),
    ];
    for (const secret of refused) {
      expect(await exchange(secret)).toEqual({ status: 401, body: expect.objectContaining({ error: 'invalid_client' }) });
    }
    // Nor does the static secret pass by HTTP Basic.
    const basic = await fetch(`${peer.issuer}/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${clientB.clientId}:${clientB.clientSecret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: callback.form!.code!, redirect_uri: B_CALLBACK, code_verifier: verifier }),
    });
    expect(basic.status).toBe(401);
    expect(await basic.json()).toMatchObject({ error: 'invalid_client' });

    // The refusals happened before oidc-provider saw the request, so the code is still good.
    const ok = await exchange(await appleStyleClientSecret({
      teamId, keyId, privateJwk: teamPrivateJwk, clientId: clientB.clientId, audience: peer.issuer,
    }));
    expect(ok.status).toBe(200);
    const { payload } = await jwtVerify(ok.body.id_token as string, createRemoteJWKSet(new URL(`${peer.issuer}/jwks`)), {
      issuer: peer.issuer, audience: clientB.clientId,
    });
    expect(payload).toMatchObject({ sub: 'bob-sub', nonce: 'nonce-b', email: 'bob@privaterelay.example.test', email_verified: true });
  });

  it('also takes the team-signed secret by HTTP Basic', async () => {
    const { url, verifier } = authorizationUrl(peer, {
      client_id: clientB.clientId, redirect_uri: B_CALLBACK, nonce: 'n', response_mode: 'form_post',
    });
    const { code } = callbackParams(await peer.authorize(url, { sub: 'bob-sub' }));
    const secret = await appleStyleClientSecret({ teamId, keyId, privateJwk: teamPrivateJwk, clientId: clientB.clientId, audience: peer.issuer });
    const res = await fetch(`${peer.issuer}/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientB.clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: code!, redirect_uri: B_CALLBACK, code_verifier: verifier }),
    });
    expect(res.status).toBe(200);
  });

  it('a cancelled sign-in is posted back as error=access_denied with the state', async () => {
    const { url, state } = authorizationUrl(peer, {
      client_id: clientB.clientId, redirect_uri: B_CALLBACK, nonce: 'n', response_mode: 'form_post',
    });
    const callback = await peer.authorize(url, { cancel: true });
    expect(callback.method).toBe('POST');
    expect(callback.url).toBe(B_CALLBACK);
    expect(callback.form).toMatchObject({ error: 'access_denied', state });
  });

  it('like Apple, refuses an email/name request that does not ask for form_post', async () => {
    const { url } = authorizationUrl(peer, { client_id: clientB.clientId, redirect_uri: B_CALLBACK, nonce: 'n' });
    await expect(peer.authorize(url, { sub: 'bob-sub' })).rejects.toThrow(/response_mode must be form_post/);
  });

  it('issueIdToken works for the Apple-style client with a team-signed secret', async () => {
    const idToken = await peer.issueIdToken({
      clientId: clientB.clientId,
      clientSecret: await appleStyleClientSecret({ teamId, keyId, privateJwk: teamPrivateJwk, clientId: clientB.clientId, audience: peer.issuer }),
      redirectUri: B_CALLBACK,
      nonce: 'native-nonce',
      sub: 'bob-sub',
    });
    const { payload } = await jwtVerify(idToken, createRemoteJWKSet(new URL(`${peer.issuer}/jwks`)), { issuer: peer.issuer, audience: clientB.clientId });
    expect(payload.nonce).toBe('native-nonce');
  });
});
