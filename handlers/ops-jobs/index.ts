import type { HandlerMap } from '../../src/http/handler-types';
import { listJobRuns } from './listJobRuns';
import { getJobRun } from './getJobRun';
import { cancelJobRun } from './cancelJobRun';
import { retryJobRun } from './retryJobRun';
import { listJobDefinitions } from './listJobDefinitions';
import { getJobDefinition } from './getJobDefinition';
import { updateJobDefinition } from './updateJobDefinition';
import { resetJobDefinition } from './resetJobDefinition';
import { listJobDefinitionHistory } from './listJobDefinitionHistory';
import { runJobNow } from './runJobNow';
import { listScheduledJobs } from './listScheduledJobs';
import { getJobsOverview } from './getJobsOverview';

export const opsJobsHandlers: HandlerMap = {
  listJobRuns,
  getJobRun,
  cancelJobRun,
  retryJobRun,
  listJobDefinitions,
  getJobDefinition,
  updateJobDefinition,
  resetJobDefinition,
  listJobDefinitionHistory,
  runJobNow,
  listScheduledJobs,
  getJobsOverview,
};
