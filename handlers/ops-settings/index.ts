import type { HandlerMap } from '../types';

export const opsSettingsHandlers: HandlerMap = {};
