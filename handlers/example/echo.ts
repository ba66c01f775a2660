import type { Handler } from '../types';

export const echo: Handler<'echo'> = ({ body, requestId }) => ({
  status: 200,
  body: { message: body.message, request_id: requestId },
});
