// Who is acting, and from which request: what domain functions record in audit events and runs.
import type { Actor, RequestMeta } from '../src/audit/store';
import type { HandlerContext, OperationId } from './types';

export function actingOperator(ctx: HandlerContext<OperationId>): { actor: Actor; meta: RequestMeta } {
  return {
    actor: { kind: 'operator', id: ctx.caller?.userId ?? null },
    meta: { requestId: ctx.requestId, ip: ctx.ip, userAgent: ctx.userAgent },
  };
}
