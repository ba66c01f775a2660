import type { Handler } from '../types';
import { toApiSetting } from './views';

export const getSetting: Handler<'getSetting'> = async ({ services, params }) => {
  return { status: 200, body: toApiSetting(await services.settings.get(params.key)) };
};
