import type { HandlerMap } from '../types';
import { getSystem } from './getSystem';
import { listSignInMethods } from './listSignInMethods';

export const opsSystemHandlers: HandlerMap = {
  getSystem,
  listSignInMethods,
};
