import type { Handler } from '../types';
import { toApiRun } from './views';

export const getJobRun: Handler<'getJobRun'> = async ({ services, params }) => ({ status: 200, body: toApiRun(await services.jobRuns.get(params.id)) });
