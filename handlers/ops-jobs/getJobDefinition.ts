import type { Handler } from '../types';
import { getDefinition } from '../../src/jobs/definitions';
import { toApiDefinition } from './mappers';

export const getJobDefinition: Handler<'getJobDefinition'> = async ({ app, params }) => ({ status: 200, body: toApiDefinition(await getDefinition(app, params.name)) });
