import type { Handler } from '../../src/http/handler-types';
import { orgBody } from './views';

/** Soft delete: the organisation is answered with `deleted_at` set. */
export const deleteOrg: Handler<'deleteOrg'> = async ({ services, caller, params, meta }) => ({
  status: 200,
  body: orgBody(await services.orgs.delete(caller, params.orgId, meta)),
});
