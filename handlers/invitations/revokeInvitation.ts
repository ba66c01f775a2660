import type { Handler } from '../../src/http/handler-types';

export const revokeInvitation: Handler<'revokeInvitation'> = async ({ services, caller, params, meta }) => {
  await services.invitations.revoke(caller, params.orgId, params.invitationId, meta);
  return { status: 204, body: undefined };
};
