import type { HandlerMap } from '../types';
import { listQueues } from './listQueues';
import { pauseQueue } from './pauseQueue';
import { resumeQueue } from './resumeQueue';

export const opsQueuesHandlers: HandlerMap = { listQueues, pauseQueue, resumeQueue };
