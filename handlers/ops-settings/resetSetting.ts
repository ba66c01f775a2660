import type { Handler } from '../../src/http/handler-types';
import { actingOperator } from '../actor';
import { toApiSetting } from './views';

export const resetSetting: Handler<'resetSetting'> = async (ctx) => {
  const { version, reason } = ctx.body;
  const setting = await ctx.services.settings.reset(ctx.params.key, { version, reason }, actingOperator(ctx));
  return { status: 200, body: toApiSetting(setting) };
};
