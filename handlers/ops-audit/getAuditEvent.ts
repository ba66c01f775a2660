import type { Handler } from '../types';
import { toApiEvent } from './views';

export const getAuditEvent: Handler<'getAuditEvent'> = async ({ services, params }) => ({ status: 200, body: toApiEvent(await services.audit.get(params.id)) });
