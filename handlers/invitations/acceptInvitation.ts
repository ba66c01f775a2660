import type { Handler } from '../../src/http/handler-types';
import { memberBody, orgBody } from '../orgs/views';

export const acceptInvitation: Handler<'acceptInvitation'> = async ({ services, caller, body, meta }) => {
  const { org, member } = await services.invitations.accept(caller, body.token, meta);
  return { status: 200, body: { org: orgBody(org), member: memberBody(member) } };
};
