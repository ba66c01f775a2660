import type { HandlerMap } from '../types';
import { listJobRuns } from './listJobRuns';
import { getJobRun } from './getJobRun';
import { cancelJobRun } from './cancelJobRun';
import { retryJobRun } from './retryJobRun';
import { getJobsOverview } from './getJobsOverview';

export const opsJobsHandlers: HandlerMap = {
  listJobRuns,
  getJobRun,
  cancelJobRun,
  retryJobRun,
  getJobsOverview,
};
