import type { Handler } from '../types';
import { DEFAULT_LIMIT, decodeCursor, page } from '../../src/pagination';

const isCursor = (key: any): key is { id: string } => typeof key?.id === 'string' && /^idn_[0-9a-z]{26}$/.test(key.id);

/** The caller's linked provider identities, newest first. */
export const listIdentities: Handler<'listIdentities'> = async ({ services, caller, query }) => {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const after = decodeCursor(query.cursor, isCursor);
  const rows = await services.social.listOwn(caller.userId, limit + 1, after?.id);
  const { items, nextCursor } = page(rows, limit, (last) => ({ id: last.id }));
  return {
    status: 200,
    body: {
      items: items.map((i) => ({
        id: i.id,
        provider: i.provider,
        subject: i.subject,
        email: i.email,
        email_verified: i.emailVerified,
        email_forwarding: i.emailForwarding,
        created_at: i.createdAt.toISOString(),
        last_used_at: i.lastUsedAt.toISOString(),
      })),
      next_cursor: nextCursor,
    },
  };
};
