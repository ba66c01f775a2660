// The invitations tag's operations.
import type { HandlerMap } from '../../src/http/handler-types';
import { listInvitations } from './listInvitations';
import { createInvitation } from './createInvitation';
import { revokeInvitation } from './revokeInvitation';
import { resendInvitation } from './resendInvitation';
import { acceptInvitation } from './acceptInvitation';

export const invitationsHandlers: HandlerMap = { listInvitations, createInvitation, revokeInvitation, resendInvitation, acceptInvitation };
