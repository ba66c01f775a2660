// The job kinds this service declares. Add a kind here (with its defaults) to make it exist.
// A kind lives with the domain whose work it does.
import type { AppContext } from '../app-context';
import type { JobKind } from './kinds';
import { mailSend } from '../mail/send-job';
import { passwordResetSend } from '../accounts/password-reset-job';
import { retentionEnforce } from './kinds/retention-enforce';

export const jobKinds: JobKind<AppContext>[] = [mailSend, passwordResetSend, retentionEnforce];
