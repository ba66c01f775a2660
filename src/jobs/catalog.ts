// The job kinds this service declares. Add a kind here (with its defaults) to make it exist.
import type { AppContext } from '../app-context';
import type { JobKind } from './kinds';
import { mailSend } from './kinds/mail-send';
import { retentionEnforce } from './kinds/retention-enforce';

export const jobKinds: JobKind<AppContext>[] = [mailSend, retentionEnforce];
