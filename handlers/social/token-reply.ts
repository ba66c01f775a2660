// Native sign-in with an ID token: 200 like POST /v1/auth/login (`bearer` by default here), or 202 with a challenge.
import type { HandlerContext } from '../types';
import type { Provider } from '../../src/config/social-providers';
import { challengeReply, sessionReply } from '../auth/session-reply';

type Ctx = Pick<HandlerContext<'providerAToken'>, 'app' | 'services' | 'meta'>;

export async function tokenReply({ app, services, meta }: Ctx, provider: Provider, body: { id_token: string; nonce: string; transport?: 'cookie' | 'bearer'; name?: string }) {
  const outcome = await services.social.signInWithIdToken(provider, { idToken: body.id_token, nonce: body.nonce, transport: body.transport ?? 'bearer', name: body.name ?? null }, meta);
  if (outcome.kind === 'challenge') return { status: 202 as const, body: challengeReply(outcome.challenge) };
  const reply = sessionReply(app.config, outcome, app.now());
  return { status: 200 as const, body: reply.body, headers: reply.headers };
}
