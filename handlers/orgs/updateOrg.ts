import type { Handler } from '../../src/http/handler-types';
import { orgBody } from './views';

export const updateOrg: Handler<'updateOrg'> = async ({ services, caller, params, body, meta }) => ({
  status: 200,
  body: orgBody(await services.orgs.update(caller, params.orgId, { name: body.name, slug: body.slug }, meta)),
});
