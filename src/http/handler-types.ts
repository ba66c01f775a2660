// Typed handler signatures, derived from the generated contract types: the router calls handlers
// through these, and each handler (handlers/, above src/http) maps between these API shapes and the
// domains' shapes. Domains never import them.
import type { Request, Response } from 'express';
import type { operations } from '../../codegen/api-types';
import type { PublicOperationId } from '../../codegen/operation-access';
import type { AppContext } from '../app-context';
import type { Services } from '../services';
import type { RequestMeta } from '../audit/service';
import type { Caller } from '../sessions/service';

export type OperationId = keyof operations;
type Op<K extends OperationId> = operations[K];

type JsonContent<T> = T extends { content: { 'application/json': infer B } }
  ? B
  : T extends { content: { 'application/x-www-form-urlencoded': infer F } }
    ? F
    : undefined;

type RequestBody<K extends OperationId> = Op<K> extends { requestBody?: infer R } ? JsonContent<NonNullable<R>> : undefined;
type PathParams<K extends OperationId> = Op<K>['parameters'] extends { path?: infer P } ? NonNullable<P> : never;
type QueryParams<K extends OperationId> = Op<K>['parameters'] extends { query?: infer Q } ? NonNullable<Q> : never;

type Responses<K extends OperationId> = Op<K>['responses'];
type SuccessStatus<K extends OperationId> = Extract<keyof Responses<K>, 200 | 201 | 202 | 204 | 302>;
type ResponseBody<R> = R extends { content: infer C } ? C[keyof C] : undefined;

/** What a handler returns: a documented success status and its body. Errors are thrown as AppError. */
type Reply<K extends OperationId> = {
  [S in SuccessStatus<K>]: { status: S; body: ResponseBody<Responses<K>[S]>; headers?: Record<string, string | string[]> };
}[SuccessStatus<K>];

export interface HandlerContext<K extends OperationId> {
  app: AppContext;
  /** The domain services (over the pool): handlers call these. */
  services: Services;
  body: RequestBody<K>;
  params: PathParams<K>;
  query: QueryParams<K>;
  /** The signed-in caller: always there on protected operations (the router answered 401 otherwise). */
  caller: K extends PublicOperationId ? Caller | null : Caller;
  /** Who asked, from where: request id, client IP, user agent (what audit events record). */
  meta: RequestMeta;
  req: Request;
  res: Response;
}

export type Handler<K extends OperationId> = (ctx: HandlerContext<K>) => Promise<Reply<K>> | Reply<K>;

export type HandlerMap = { [K in OperationId]?: Handler<K> };
