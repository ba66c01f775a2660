import type { Handler } from '../types';
import { listDefinitions } from '../../src/jobs/definitions';
import { toApiDefinition } from './mappers';

export const listJobDefinitions: Handler<'listJobDefinitions'> = async ({ app }) => ({
  status: 200,
  body: { items: (await listDefinitions(app)).map(toApiDefinition), next_cursor: null },
});
