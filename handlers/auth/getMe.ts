import type { Handler } from '../../src/http/handler-types';
import { accountView } from '../../src/accounts/me';
import { toApiUser } from './views';

/** The signed-in user, as read with the session (no further database round trip). */
export const getMe: Handler<'getMe'> = ({ caller }) => ({ status: 200, body: toApiUser(accountView(caller.user)) });
