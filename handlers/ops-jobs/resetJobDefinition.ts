import type { Handler } from '../types';
import { resetDefinition } from '../../src/jobs/definitions';
import { actingOperator } from '../actor';
import { toApiDefinition } from './mappers';

export const resetJobDefinition: Handler<'resetJobDefinition'> = async (ctx) => {
  const { version, reason } = ctx.body;
  const def = await resetDefinition(ctx.app, ctx.params.name, { version, reason }, actingOperator(ctx));
  return { status: 200, body: toApiDefinition(def) };
};
