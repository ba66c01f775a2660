import type { Handler } from '../../src/http/handler-types';
import { actingOperator } from '../actor';
import { toApiSetting } from './views';

export const updateSetting: Handler<'updateSetting'> = async (ctx) => {
  const { value, version, reason } = ctx.body;
  const setting = await ctx.services.settings.update(ctx.params.key, { value, version, reason }, actingOperator(ctx));
  return { status: 200, body: toApiSetting(setting) };
};
