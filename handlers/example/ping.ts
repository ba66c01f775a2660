import type { Handler } from '../types';

export const ping: Handler<'ping'> = ({ app }) => ({
  status: 200,
  body: { pong: true, time: app.now().toISOString() },
});
