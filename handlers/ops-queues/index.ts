import type { HandlerMap } from '../types';

export const opsQueuesHandlers: HandlerMap = {};
