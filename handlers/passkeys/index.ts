// The passkeys tag's operations.
import type { HandlerMap } from '../../src/http/handler-types';
import { listPasskeys } from './listPasskeys';
import { startPasskeyRegistration } from './startPasskeyRegistration';
import { addPasskey } from './addPasskey';
import { startPasskeyLogin } from './startPasskeyLogin';
import { passkeyLogin } from './passkeyLogin';
import { startPasskeyVerification } from './startPasskeyVerification';
import { renamePasskey } from './renamePasskey';
import { deletePasskey } from './deletePasskey';

export const passkeysHandlers: HandlerMap = {
  listPasskeys,
  startPasskeyRegistration,
  addPasskey,
  startPasskeyLogin,
  passkeyLogin,
  startPasskeyVerification,
  renamePasskey,
  deletePasskey,
};
