import type { Handler } from '../../src/http/handler-types';
import { tokenReply } from './both-providers';

/** Spec 4.2: sign in with provider_a's ID token and a nonce from POST /v1/auth/provider_a/nonce. */
export const providerAToken: Handler<'providerAToken'> = (ctx) => tokenReply(ctx, 'provider_a', ctx.body);
