import type { Handler } from '../../src/http/handler-types';
import { callbackReply } from './both-providers';

/** provider_a's GET redirect back to us. */
export const providerACallback: Handler<'providerACallback'> = (ctx) => {
  const q = ctx.query;
  return callbackReply(ctx, 'provider_a', { code: q.code, state: q.state, error: q.error, error_description: q.error_description, iss: q.iss });
};
