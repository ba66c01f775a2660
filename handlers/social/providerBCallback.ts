import type { Handler } from '../../src/http/handler-types';
import { callbackReply } from './both-providers';

/**
 * The name in provider_b's `user` form field (first sign-in only): `{"name": {"firstName",
 * "lastName"}}` as a JSON string. Anything else is ignored; the email always comes from the ID token.
 */
function nameOf(user: unknown): string | null {
  if (typeof user !== 'string') return null;
  try {
    const name = (JSON.parse(user) as { name?: { firstName?: unknown; lastName?: unknown } })?.name;
    const full = [name?.firstName, name?.lastName].filter((part) => typeof part === 'string' && part.trim()).join(' ').trim();
    return full ? full.slice(0, 200) : null;
  } catch {
    return null;
  }
}

/** provider_b's form post back to us (response_mode=form_post; exempt from the Origin check, bound by state). */
export const providerBCallback: Handler<'providerBCallback'> = (ctx) => {
  const form = ctx.body;
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  return callbackReply(ctx, 'provider_b', {
    code: text(form.code),
    state: text(form.state),
    error: text(form.error),
    error_description: text(form.error_description),
    iss: text(form.iss),
    name: nameOf(form.user),
  });
};
