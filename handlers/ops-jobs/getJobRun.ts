import type { Handler } from '../types';
import { getRun } from '../../src/jobs/runs';
import { toApiRun } from './mappers';

export const getJobRun: Handler<'getJobRun'> = async ({ app, params }) => ({ status: 200, body: toApiRun(await getRun(app, params.id)) });
