import type { Handler } from '../../src/http/handler-types';
import { toApiDefinition } from './views';

export const listJobDefinitions: Handler<'listJobDefinitions'> = async ({ services }) => ({
  status: 200,
  body: { items: (await services.jobDefinitions.list()).map(toApiDefinition), next_cursor: null },
});
