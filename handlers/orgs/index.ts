// The orgs tag's operations (organisations: the tenants).
import type { HandlerMap } from '../../src/http/handler-types';
import { listOrgs } from './listOrgs';
import { createOrg } from './createOrg';
import { getOrg } from './getOrg';
import { updateOrg } from './updateOrg';
import { deleteOrg } from './deleteOrg';
import { restoreOrg } from './restoreOrg';
import { leaveOrg } from './leaveOrg';

export const orgsHandlers: HandlerMap = { listOrgs, createOrg, getOrg, updateOrg, deleteOrg, restoreOrg, leaveOrg };
