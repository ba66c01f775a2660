import type { Handler } from '../../src/http/handler-types';
import { actingOperator } from '../actor';
import { toApiDefinition } from './views';

export const updateJobDefinition: Handler<'updateJobDefinition'> = async (ctx) => {
  const { config, version, reason } = ctx.body;
  const def = await ctx.services.jobDefinitions.update(ctx.params.name, { config, version, reason }, actingOperator(ctx));
  return { status: 200, body: toApiDefinition(def) };
};
