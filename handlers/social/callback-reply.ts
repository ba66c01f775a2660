// The answer to both callbacks: always a 302 to the app's `redirect_to` (with the session cookie,
// a `#challenge_token=` fragment, or `?error=<code>`), and the state cookie cleared.
import type { HandlerContext } from '../types';
import type { CallbackParams } from '../../src/social/service';
import type { Provider } from '../../src/config/social-providers';
import { sessionReply } from '../auth/session-reply';
import { clearStateCookie, readStateCookie } from './state-cookie';

type Ctx = Pick<HandlerContext<'providerACallback'>, 'app' | 'services' | 'meta' | 'req'>;

export async function callbackReply({ app, services, meta, req }: Ctx, provider: Provider, params: CallbackParams) {
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
