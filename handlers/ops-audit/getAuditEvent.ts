import type { Handler } from '../types';
import { toApiEvent } from './mappers';

export const getAuditEvent: Handler<'getAuditEvent'> = async ({ services, params }) => ({ status: 200, body: toApiEvent(await services.audit.get(params.id)) });
