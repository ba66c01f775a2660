// The sessions tag's operations (the signed-in devices of the current user).
import type { HandlerMap } from '../../src/http/handler-types';
import { listSessions } from './listSessions';
import { revokeSession } from './revokeSession';

export const sessionsHandlers: HandlerMap = {
  listSessions,
  revokeSession,
};
