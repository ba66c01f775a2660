import type { Handler } from '../../src/http/handler-types';
import { orgBody } from './views';

/** 201 with Location; the caller is the first owner. */
export const createOrg: Handler<'createOrg'> = async ({ services, caller, body, meta }) => {
  const org = await services.orgs.create(caller, { name: body.name, slug: body.slug }, meta);
  return { status: 201, body: orgBody(org), headers: { Location: `/v1/orgs/${org.id}` } };
};
