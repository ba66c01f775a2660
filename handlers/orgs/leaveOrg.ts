import type { Handler } from '../../src/http/handler-types';

export const leaveOrg: Handler<'leaveOrg'> = async ({ services, caller, params, meta }) => {
  await services.orgs.leave(caller, params.orgId, meta);
  return { status: 204, body: undefined };
};
