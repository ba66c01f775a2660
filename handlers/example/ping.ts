import type { Handler } from '../../src/http/handler-types';

export const ping: Handler<'ping'> = ({ app }) => ({
  status: 200,
  body: { pong: true, time: app.now().toISOString() },
});
