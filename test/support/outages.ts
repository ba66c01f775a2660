// Shared by the outage tests: a request timed, and the answer every request that needs a
// dependency that is down must get.

export interface TimedAnswer {
  status: number;
  body: any;
  retryAfter: string | undefined;
  ms: number;
}

/** Sends a request and answers its response with how long it took. */
export async function timed(send: () => PromiseLike<{ status: number; body: any; headers: Record<string, string> }>): Promise<TimedAnswer> {
  const start = Date.now();
  const res = await send();
  return { status: res.status, body: res.body, retryAfter: res.headers['retry-after'], ms: Date.now() - start };
}

/**
 * 503 `unavailable` with Retry-After, within the bound plus room for a loaded test machine
 * (before the timeouts these requests hung 30 s and more).
 */
export function expectUnavailableWithin(boundMs: number, answers: TimedAnswer[]): void {
  for (const answer of answers) {
    expect({ status: answer.status, code: answer.body.code }).toEqual({ status: 503, code: 'unavailable' });
    expect(Number(answer.retryAfter)).toBeGreaterThan(0);
    expect(answer.ms).toBeLessThan(boundMs + 2_500);
  }
}
