import type { HandlerMap } from '../../src/http/handler-types';
import { listAuditEvents } from './listAuditEvents';
import { getAuditStats } from './getAuditStats';
import { getAuditEvent } from './getAuditEvent';

export const opsAuditHandlers: HandlerMap = {
  listAuditEvents,
  getAuditStats,
  getAuditEvent,
};
