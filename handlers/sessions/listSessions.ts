import type { Handler } from '../../src/http/handler-types';

/** The caller's live sessions, newest sign-in first; the one making the request has `current: true`. */
export const listSessions: Handler<'listSessions'> = async ({ services, caller, query }) => {
  const { items, nextCursor } = await services.sessions.listOwn(caller, { limit: query.limit, cursor: query.cursor });
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
