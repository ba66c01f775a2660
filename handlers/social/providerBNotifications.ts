import type { Handler } from '../../src/http/handler-types';
import { handleNotification } from '../../src/social/notifications';

/** provider_b's signed server-to-server notification: verified, handled once, audited. */
export const providerBNotifications: Handler<'providerBNotifications'> = async ({ services, body, meta }) => {
  await handleNotification(services, body.payload, meta);
  return { status: 200, body: { received: true } };
};
