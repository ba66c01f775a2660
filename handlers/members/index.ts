// The members tag's operations.
import type { HandlerMap } from '../../src/http/handler-types';
import { listMembers } from './listMembers';
import { updateMemberRole } from './updateMemberRole';
import { removeMember } from './removeMember';

export const membersHandlers: HandlerMap = { listMembers, updateMemberRole, removeMember };
