// What the two providers' handlers share: the browser callback and the native ID-token sign-in
// are the same for provider_a and provider_b but for the provider's name.
import type { HandlerContext } from '../../src/http/handler-types';
import type { CallbackParams } from '../../src/social/service';
import type { Provider } from '../../src/config/social-providers';
import { challengeReply, sessionReply } from '../auth/views';
import { clearStateCookie, readStateCookie } from './state-cookie';

// The answer to both callbacks: always a 302 to the app's `redirect_to` (with the session cookie,
// a `#challenge_token=` fragment, or `?error=<code>`), and the state cookie cleared.
type CallbackCtx = Pick<HandlerContext<'providerACallback'>, 'app' | 'services' | 'meta' | 'req'>;

export async function callbackReply({ app, services, meta, req }: CallbackCtx, provider: Provider, params: CallbackParams) {
  const result = await services.social.callback(provider, params, readStateCookie(app.config, req), meta);
  const url = new URL(result.redirectTo);
  const cookies = [clearStateCookie(app.config)];
  if (result.kind === 'error') {
    url.searchParams.set('error', result.code);
  } else if (result.kind === 'signed_in') {
    const outcome = result.outcome;
    if (outcome.kind === 'challenge') {
      // A fragment: never sent to a server, so the token stays out of access logs and Referers.
      url.hash = new URLSearchParams({ challenge_token: outcome.challenge.token, methods: outcome.challenge.methods.join(',') }).toString();
    } else {
      cookies.push(sessionReply(app.config, outcome, app.now()).headers['Set-Cookie']!);
    }
  }
  return { status: 302 as const, body: undefined, headers: { Location: url.href, 'Set-Cookie': cookies } };
}

// Native sign-in with an ID token: 200 like POST /v1/auth/login (`bearer` by default here), or 202 with a challenge.
type TokenCtx = Pick<HandlerContext<'providerAToken'>, 'app' | 'services' | 'meta'>;

export async function tokenReply({ app, services, meta }: TokenCtx, provider: Provider, body: { id_token: string; nonce: string; transport?: 'cookie' | 'bearer'; name?: string }) {
  const outcome = await services.social.signInWithIdToken(provider, { idToken: body.id_token, nonce: body.nonce, transport: body.transport ?? 'bearer', name: body.name ?? null }, meta);
  if (outcome.kind === 'challenge') return { status: 202 as const, body: challengeReply(outcome.challenge) };
  const reply = sessionReply(app.config, outcome, app.now());
  return { status: 200 as const, body: reply.body, headers: reply.headers };
}
