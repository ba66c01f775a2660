import type { Handler } from '../../src/http/handler-types';
import { toApiDefinition } from './views';

export const getJobDefinition: Handler<'getJobDefinition'> = async ({ services, params }) => ({
  status: 200,
  body: toApiDefinition(await services.jobDefinitions.get(params.name)),
});
