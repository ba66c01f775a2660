import type { HandlerMap } from '../../src/http/handler-types';
import { getSystem } from './getSystem';
import { listSignInMethods } from './listSignInMethods';

export const opsSystemHandlers: HandlerMap = {
  getSystem,
  listSignInMethods,
};
