import type { Handler } from '../../src/http/handler-types';
import { toApiPasskey } from './views';

/** The caller's passkeys, newest first. */
export const listPasskeys: Handler<'listPasskeys'> = async ({ services, caller, query }) => {
  const { items, nextCursor } = await services.passkeys.list(caller.userId, { limit: query.limit, cursor: query.cursor });
  return { status: 200, body: { items: items.map(toApiPasskey), next_cursor: nextCursor } };
};
