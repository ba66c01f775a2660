import type { Handler } from '../../src/http/handler-types';
import { toApiSetting } from './views';

export const listSettings: Handler<'listSettings'> = async ({ services }) => {
  const settings = await services.settings.list();
  return { status: 200, body: { items: settings.map(toApiSetting), next_cursor: null } };
};
