import type { Handler } from '../types';

export const getMailConfig: Handler<'getMailConfig'> = ({ app }) => ({ status: 200, body: app.mailer.describe() });
