// Idempotency-Key on the operations that accept it (x-idempotency: accepted in the contract;
// README "Safe retries"). The router comes here only when such an operation's request carries the
// header: a request without one pays a single header lookup.
//
// The operation runs on the services of one transaction opened here: its first statement takes the
// key's lock and reads a recorded answer (src/idempotency/service.ts claim), its last records the
// answer the handler gave, byte for byte. Every change the handler makes goes through those
// services, so it commits with its record or not at all. An error (4xx or 5xx) rolls everything
// back and records nothing: the key stays free for a corrected retry.
import type { AppContext } from '../app-context';
import type { Contract, OperationInfo } from '../contract';
import type { Caller } from '../sessions/service';
import type { HandlerContext } from './handler-types';
import { fingerprintOf, parseIdempotencyKey } from '../idempotency/key';
import type { KeyedRequest } from '../idempotency/service';
import { serialiseReply, type SerialisedReply } from './reply';

export const IDEMPOTENCY_KEY = 'idempotency-key';

/** Whether the contract lets the operation take an Idempotency-Key (`x-idempotency: accepted`). */
export function acceptsIdempotencyKey(contract: Contract, op: OperationInfo): boolean {
  return contract.document.paths[op.path]?.[op.method]?.['x-idempotency'] === 'accepted';
}

/** The transaction lost the race to record its answer: rolled back, the recorded answer replays. */
class RecordedMeanwhile extends Error {}

export interface KeyedAnswer {
  answer: SerialisedReply;
  replayed: boolean;
}

/**
 * Runs the operation under the key `header` names (422 for a malformed one) for `ctx.caller`, or
 * replays its recorded answer: 409 `idempotency_key_in_use` while another request holds the key,
 * 422 `idempotency_key_reused` when it was used for a different request.
 */
export async function callWithKey(
  app: AppContext,
  op: OperationInfo,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the router's one signature for every operation's handler.
  handler: (ctx: HandlerContext<any>) => Promise<{ status: number; body?: unknown; headers?: Record<string, string | string[]> }>,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above.
  ctx: HandlerContext<any> & { caller: Caller },
  header: string | string[],
): Promise<KeyedAnswer> {
  const request: KeyedRequest = {
    userId: ctx.caller.userId,
    key: parseIdempotencyKey(header),
    fingerprint: fingerprintOf({ method: op.method, operationId: op.operationId, userId: ctx.caller.userId, params: ctx.params, query: ctx.query, body: ctx.body }),
  };
  let outcome: KeyedAnswer;
  try {
    outcome = await ctx.services.transaction(
      async (tx) => {
        const recorded = await tx.idempotency.claim(request);
        if (recorded) return { answer: recorded, replayed: true };
        const answer = serialiseReply(await handler({ ...ctx, services: tx }));
        if (!(await tx.idempotency.record(request, answer))) throw new RecordedMeanwhile();
        return { answer, replayed: false };
      },
      { limitsInside: true },
    );
  } catch (err) {
    if (!(err instanceof RecordedMeanwhile)) throw err;
    outcome = { answer: await app.services.idempotency.recorded(request), replayed: true };
  }
  if (outcome.replayed) {
    app.logger.info('idempotent replay', { request_id: ctx.meta.requestId, operation_id: op.operationId, status: outcome.answer.status });
  }
  return outcome;
}
