import type { Handler } from '../../src/http/handler-types';
import { setStateCookie } from './state-cookie';

/** 302 to the provider with state, nonce and PKCE; the state is bound to this browser by a cookie. */
export const startSocialLogin: Handler<'startSocialLogin'> = async ({ app, services, params, query, caller }) => {
  const { location, binding } = await services.social.start(params.provider, { redirectTo: query.redirect_to, intent: query.intent ?? 'login', caller });
  return { status: 302, body: undefined, headers: { Location: location, 'Set-Cookie': setStateCookie(app.config, binding) } };
};
