import type { Handler } from '../../src/http/handler-types';
import { projectBody } from '../orgs/views';

export const updateProject: Handler<'updateProject'> = async ({ services, caller, params, body, meta }) => ({
  status: 200,
  body: projectBody(await services.projects.update(caller, params.orgId, params.id, { name: body.name, description: body.description }, meta)),
});
