import type { Handler } from '../../src/http/handler-types';

export const deleteProject: Handler<'deleteProject'> = async ({ services, caller, params, meta }) => {
  await services.projects.delete(caller, params.orgId, params.id, meta);
  return { status: 204, body: undefined };
};
