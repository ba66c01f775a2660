import type { Handler } from '../../src/http/handler-types';

export const getHealth: Handler<'getHealth'> = () => ({ status: 200, body: { status: 'ok' } });
