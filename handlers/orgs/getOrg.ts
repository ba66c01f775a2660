import type { Handler } from '../../src/http/handler-types';
import { orgBody } from './views';

export const getOrg: Handler<'getOrg'> = async ({ services, caller, params }) => ({ status: 200, body: orgBody(await services.orgs.get(caller, params.orgId)) });
