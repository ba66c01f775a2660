import type { Handler } from '../../src/http/handler-types';
import { orgBody } from './views';

export const restoreOrg: Handler<'restoreOrg'> = async ({ services, caller, params, meta }) => ({
  status: 200,
  body: orgBody(await services.orgs.restore(caller, params.orgId, meta)),
});
