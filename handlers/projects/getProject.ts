import type { Handler } from '../../src/http/handler-types';
import { projectBody } from '../orgs/views';

export const getProject: Handler<'getProject'> = async ({ services, caller, params }) => ({
  status: 200,
  body: projectBody(await services.projects.get(caller, params.orgId, params.id)),
});
