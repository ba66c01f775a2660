import type { Handler } from '../../src/http/handler-types';

/** Removing oneself is leaving. */
export const removeMember: Handler<'removeMember'> = async ({ services, caller, params, meta }) => {
  await services.orgs.removeMember(caller, params.orgId, params.userId, meta);
  return { status: 204, body: undefined };
};
