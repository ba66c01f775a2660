import type { Handler } from '../../src/http/handler-types';

export const echo: Handler<'echo'> = ({ body, meta }) => ({
  status: 200,
  body: { message: body.message, request_id: meta.requestId! },
});
