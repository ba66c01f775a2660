import type { HandlerMap } from '../types';

export const opsReleasesHandlers: HandlerMap = {};
