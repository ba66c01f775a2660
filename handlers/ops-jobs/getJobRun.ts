import type { Handler } from '../../src/http/handler-types';
import { toApiRun } from './views';

export const getJobRun: Handler<'getJobRun'> = async ({ services, params }) => ({ status: 200, body: toApiRun(await services.jobRuns.get(params.id)) });
