import type { HandlerMap } from '../types';
import { listJobRuns } from './listJobRuns';
import { getJobRun } from './getJobRun';
import { cancelJobRun } from './cancelJobRun';
import { retryJobRun } from './retryJobRun';

export const opsJobsHandlers: HandlerMap = {
  listJobRuns,
  getJobRun,
  cancelJobRun,
  retryJobRun,
};
