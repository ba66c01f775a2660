import type { Handler } from '../../src/http/handler-types';
import { memberBody } from '../orgs/views';

export const updateMemberRole: Handler<'updateMemberRole'> = async ({ services, caller, params, body, meta }) => ({
  status: 200,
  body: memberBody(await services.orgs.changeRole(caller, params.orgId, params.userId, body.role, meta)),
});
