import type { Handler } from '../../src/http/handler-types';
import { actingOperator } from '../actor';
import { toApiDefinition } from './views';

export const resetJobDefinition: Handler<'resetJobDefinition'> = async (ctx) => {
  const { version, reason } = ctx.body;
  const def = await ctx.services.jobDefinitions.reset(ctx.params.name, { version, reason }, actingOperator(ctx));
  return { status: 200, body: toApiDefinition(def) };
};
