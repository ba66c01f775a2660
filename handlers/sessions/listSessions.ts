import type { Handler } from '../types';
import { DEFAULT_LIMIT, decodeCursor, page } from '../../src/pagination';

const isCursor = (key: any): key is { id: string } => typeof key?.id === 'string' && /^ses_[0-9a-z]{26}$/.test(key.id);

/** The caller's live sessions, newest sign-in first; the one making the request has `current: true`. */
export const listSessions: Handler<'listSessions'> = async ({ services, caller, query }) => {
  const limit = query.limit ?? DEFAULT_LIMIT;
  const after = decodeCursor(query.cursor, isCursor);
  const rows = await services.sessions.listOwn(caller, limit + 1, after?.id);
  const { items, nextCursor } = page(rows, limit, (last) => ({ id: last.id }));
  return {
    status: 200,
    body: {
      items: items.map((s) => ({
        id: s.id,
        created_at: s.createdAt.toISOString(),
        last_seen_at: s.lastSeenAt.toISOString(),
        expires_at: s.expiresAt.toISOString(),
        // The contract has `ip` as a string; sessions made without a known address show ''.
        ip: s.ip ?? '',
        user_agent: s.userAgent,
        current: s.current,
      })),
      next_cursor: nextCursor,
    },
  };
};
