// A retrying client (README "Safe retries"): openapi-fetch middleware that gives each write that
// takes an Idempotency-Key one key of its own, kept across that write's retries, and retries on a
// network error, on 503 (after Retry-After) and on 409 idempotency_key_in_use, with exponential
// backoff and a cap. Idempotent methods (GET, HEAD, PUT, DELETE) are retried without a key; other
// writes are never retried (a lost answer may mean it was applied).
import type { Middleware } from 'openapi-fetch';

export interface RetryOptions {
  /** The writes that take a key, as `POST /v1/orgs`: the contract's `x-idempotency: accepted`. */
  keyed: ReadonlySet<string>;
  /** Attempts in all, the first one included. */
  attempts?: number;
  /** The first wait (doubled at each retry, with jitter) and the longest, Retry-After included. */
  baseDelayMs?: number;
  maxDelayMs?: number;
}

const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);

export function retrying({ keyed, attempts = 5, baseDelayMs = 200, maxDelayMs = 10_000 }: RetryOptions): Middleware {
  /** An unsent copy of each retriable request, by openapi-fetch's request id. */
  const pending = new Map<string, Request>();

  const delayMs = (retry: number, last: unknown) => {
    const retryAfter = last instanceof Response ? Number(last.headers.get('Retry-After')) : NaN;
    if (Number.isFinite(retryAfter) && retryAfter >= 0) return Math.min(retryAfter * 1000, maxDelayMs);
    return Math.min(baseDelayMs * 2 ** (retry - 1), maxDelayMs) * (0.5 + Math.random() / 2);
  };

  const worthRetrying = async (response: Response) => {
    if (response.status === 503) return true;
    if (response.status !== 409) return false;
    const problem = (await response.clone().json().catch(() => null)) as { code?: string } | null;
    return problem?.code === 'idempotency_key_in_use';
  };

  /** Sends the copy again until an answer not worth retrying, or the attempts are spent. */
  const retry = async (id: string, fetch: typeof globalThis.fetch, first: unknown): Promise<Response | Error> => {
    const copy = pending.get(id)!;
    pending.delete(id);
    let last = first;
    for (let attempt = 2; attempt <= attempts; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, delayMs(attempt - 1, last)));
      try {
        last = await fetch(copy.clone());
      } catch (error) {
        last = error;
        continue;
      }
      if (!(await worthRetrying(last as Response))) break;
    }
    return last instanceof Response || last instanceof Error ? last : new Error(String(last));
  };

  return {
    onRequest({ request, schemaPath, id }) {
      const takesKey = keyed.has(`${request.method} ${schemaPath}`);
      if (!takesKey && !IDEMPOTENT_METHODS.has(request.method)) return undefined;
      let send = request;
      if (takesKey && !request.headers.has('Idempotency-Key')) {
        const headers = new Headers(request.headers);
        headers.set('Idempotency-Key', `"${crypto.randomUUID()}"`); // a Structured Field string
        send = new Request(request, { headers });
      }
      pending.set(id, send.clone());
      return send;
    },
    onError({ id, error, options }) {
      return pending.has(id) ? retry(id, options.fetch, error) : undefined;
    },
    async onResponse({ id, response, options }) {
      if (!pending.has(id)) return undefined;
      if (!(await worthRetrying(response))) return void pending.delete(id);
      const last = await retry(id, options.fetch, response);
      if (last instanceof Error) throw last;
      return last;
    },
  };
}
