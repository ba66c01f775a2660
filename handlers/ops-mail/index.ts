import type { HandlerMap } from '../types';

export const opsMailHandlers: HandlerMap = {};
