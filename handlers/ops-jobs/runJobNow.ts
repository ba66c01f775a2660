import type { Handler } from '../types';
import { runNow } from '../../src/jobs/definitions';
import { actingOperator } from '../actor';
import { toApiRun } from './mappers';

export const runJobNow: Handler<'runJobNow'> = async (ctx) => ({ status: 202, body: toApiRun(await runNow(ctx.app, ctx.params.name, actingOperator(ctx))) });
