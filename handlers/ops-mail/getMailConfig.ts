import type { Handler } from '../types';

export const getMailConfig: Handler<'getMailConfig'> = ({ services }) => ({ status: 200, body: services.mail.describe() });
