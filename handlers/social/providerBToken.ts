import type { Handler } from '../../src/http/handler-types';
import { tokenReply } from './both-providers';

/** Sign in with provider_b's ID token; `user.name` (first authorisation only) names a new account. */
export const providerBToken: Handler<'providerBToken'> = (ctx) => tokenReply(ctx, 'provider_b', { ...ctx.body, name: ctx.body.user?.name });
