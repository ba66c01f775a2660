import type { HandlerMap } from '../../src/http/handler-types';
import { listQueues } from './listQueues';
import { pauseQueue } from './pauseQueue';
import { resumeQueue } from './resumeQueue';

export const opsQueuesHandlers: HandlerMap = { listQueues, pauseQueue, resumeQueue };
