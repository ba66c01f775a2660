import type { Handler } from '../types';
import { toApiRun } from './mappers';

export const getJobRun: Handler<'getJobRun'> = async ({ services, params }) => ({ status: 200, body: toApiRun(await services.jobRuns.get(params.id)) });
