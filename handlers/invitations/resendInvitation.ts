import type { Handler } from '../../src/http/handler-types';
import { invitationBody } from '../orgs/views';

export const resendInvitation: Handler<'resendInvitation'> = async ({ services, caller, params, meta }) => ({
  status: 200,
  body: invitationBody(await services.invitations.resend(caller, params.orgId, params.invitationId, meta)),
});
