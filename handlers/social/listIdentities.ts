import type { Handler } from '../../src/http/handler-types';

/** The caller's linked provider identities, newest first. */
export const listIdentities: Handler<'listIdentities'> = async ({ services, caller, query }) => {
  const { items, nextCursor } = await services.identities.listOwn(caller.userId, { limit: query.limit, cursor: query.cursor });
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
