import type { Handler } from '../../src/http/handler-types';
import { toApiSetting } from './views';

export const getSetting: Handler<'getSetting'> = async ({ services, params }) => {
  return { status: 200, body: toApiSetting(await services.settings.get(params.key)) };
};
