import type { Handler } from '../types';
import { retryRun } from '../../src/jobs/runs';
import { actingOperator } from '../actor';
import { toApiRun } from './mappers';

export const retryJobRun: Handler<'retryJobRun'> = async (ctx) => ({ status: 200, body: toApiRun(await retryRun(ctx.app, ctx.params.id, actingOperator(ctx))) });
