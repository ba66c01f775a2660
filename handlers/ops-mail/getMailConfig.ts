import type { Handler } from '../../src/http/handler-types';

export const getMailConfig: Handler<'getMailConfig'> = ({ services }) => ({ status: 200, body: services.mail.describe() });
