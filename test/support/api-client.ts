// The test app through a client typed from the contract: `createClient<paths>` of openapi-fetch
// (paths from codegen/api-types.ts, made by `npm run codegen`), so a setup step that sends a body or
// reads a field the contract does not have fails the type-check. Its `fetch` hands each Request to
// the test's contract client (test-app.ts `contractClient`, supertest in process), which checks the
// response against openapi.yaml exactly as it does for `t.http`; the answer is then given back to
// openapi-fetch as a fetch Response. A response the contract does not describe rejects the call.
import createClient from 'openapi-fetch';
import type { paths } from '../../codegen/api-types';
import type { ContractClient } from './test-app';

export type ApiClient = ReturnType<typeof createClient<paths>>;

/** Where requests seem to go: only the path and query reach the app. */
const BASE_URL = 'http://test-app.invalid';

type Method = keyof ContractClient;

/** A fetch that answers through `http` (every answer checked against the contract). */
export function contractFetch(http: ContractClient) {
  return async (request: Request): Promise<Response> => {
    const method = request.method.toLowerCase() as Method;
    if (!(method in http)) throw new Error(`the test client does not send ${request.method}`);
    const url = new URL(request.url);
    let test = http[method](url.pathname + url.search);
    request.headers.forEach((value, name) => {
      test = test.set(name, value);
    });
    const body = Buffer.from(await request.arrayBuffer());
    // Sent as the bytes openapi-fetch serialised (superagent would otherwise serialise them again).
    if (body.length > 0) test = test.serialize((data: unknown) => data as string).send(body as unknown as string);
    const res = await test;

    const headers = new Headers();
    for (const [name, value] of Object.entries(res.headers as Record<string, string | string[] | undefined>)) {
      // supertest has already decoded the body: its length and encoding no longer apply.
      if (value === undefined || ['content-length', 'content-encoding', 'transfer-encoding'].includes(name)) continue;
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    }
    const nullBody = [101, 204, 205, 304].includes(res.status) || method === 'head';
    const bytes: ConstructorParameters<typeof Response>[0] = nullBody ? null : Buffer.isBuffer(res.body) ? new Uint8Array(res.body) : (res.text ?? '');
    const response = new Response(bytes, { status: res.status, headers });
    // A made Response has no URL; this one names what was asked (for failure messages).
    Object.defineProperty(response, 'url', { value: request.url });
    return response;
  };
}

/** A typed client of the test app; `headers` go with every request (e.g. an Authorization). */
export function apiClient(http: ContractClient, headers: Record<string, string> = {}): ApiClient {
  return createClient<paths>({ baseUrl: BASE_URL, fetch: contractFetch(http), headers });
}

interface Answer {
  data?: unknown;
  error?: unknown;
  response: Response;
}

/**
 * The data of a typed call that had to answer `status` (a setup step: anything else fails the
 * test, naming the operation and the Problem it got).
 */
export async function expectStatus<A extends Answer>(call: Promise<A>, status: number): Promise<NonNullable<A['data']>> {
  const answer = await call;
  if (answer.response.status !== status) {
    const url = new URL(answer.response.url || BASE_URL);
    throw new Error(`${url.pathname}${url.search}: expected ${status}, got ${answer.response.status}: ${JSON.stringify(answer.error ?? answer.data)}`);
  }
  return answer.data as NonNullable<A['data']>;
}

/** The Authorization header of a bearer session (`auth` as the helpers give it: "Bearer …"). */
export const authorization = (who: { auth: string } | string) => ({ Authorization: typeof who === 'string' ? who : who.auth });
