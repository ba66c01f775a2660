import type { HandlerMap } from '../types';

export const opsSystemHandlers: HandlerMap = {};
