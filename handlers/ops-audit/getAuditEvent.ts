import type { Handler } from '../../src/http/handler-types';
import { toApiEvent } from './views';

export const getAuditEvent: Handler<'getAuditEvent'> = async ({ services, params }) => ({ status: 200, body: toApiEvent(await services.audit.get(params.id)) });
