import type { HandlerMap } from '../types';

export const opsJobsHandlers: HandlerMap = {};
