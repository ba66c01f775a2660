import type { Handler } from '../types';

export const getHealth: Handler<'getHealth'> = () => ({ status: 200, body: { status: 'ok' } });
