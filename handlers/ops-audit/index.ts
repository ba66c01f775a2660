import type { HandlerMap } from '../types';

export const opsAuditHandlers: HandlerMap = {};
