import type { Handler } from '../../src/http/handler-types';
import { invitationBody } from '../orgs/views';

export const createInvitation: Handler<'createInvitation'> = async ({ services, caller, params, body, meta }) => ({
  status: 201,
  body: invitationBody(await services.invitations.create(caller, params.orgId, { email: body.email, role: body.role }, meta)),
});
