import type { Handler } from '../../src/http/handler-types';
import { projectBody } from '../orgs/views';

export const createProject: Handler<'createProject'> = async ({ services, caller, params, body, meta }) => {
  const project = await services.projects.create(caller, params.orgId, { name: body.name, description: body.description }, meta);
  return { status: 201, body: projectBody(project), headers: { Location: `/v1/orgs/${project.orgId}/projects/${project.id}` } };
};
