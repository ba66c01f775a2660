// Who is acting, and from which request: what domain functions record in audit events and runs.
import type { Actor, RequestMeta } from '../src/audit/service';
import type { HandlerContext, OperationId } from '../src/http/handler-types';

export function actingOperator(ctx: Pick<HandlerContext<OperationId>, 'caller' | 'meta'>): { actor: Actor; meta: RequestMeta } {
  return { actor: { kind: 'operator', id: ctx.caller?.userId ?? null }, meta: ctx.meta };
}
