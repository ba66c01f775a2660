// Reads a request's body, in a media type its operation declares (415 otherwise), with the
// parser of that type.
import type { Request, Response } from 'express';
import express from 'express';
import type { OperationInfo } from '../contract';
import { defineErrors } from '../errors';

const BODY_LIMIT = '1mb';

const bodyErrors = defineErrors('http', {
  unsupportedMediaType: { code: 'unsupported_media_type', status: 415, detail: 'The operation does not take a body of this media type.' },
});

/**
 * One parser per media type an operation may declare. The router picks it from the request's
 * Content-Type after checking the operation declares that type, so each parses whatever it is given.
 */
const PARSERS: Record<string, express.RequestHandler> = {
  'application/json': express.json({ limit: BODY_LIMIT, type: () => true }),
  'application/x-www-form-urlencoded': express.urlencoded({ limit: BODY_LIMIT, extended: false, type: () => true }),
};

/** What body reading needs of a route, compiled once by bodyParsersOf. */
export interface BodyRoute {
  /** Body parser by declared media type (lower case, without parameters). */
  parsers: Map<string, express.RequestHandler>;
  /** The 415 detail and `Accept` value naming the declared media types. */
  unsupportedMediaType: { detail: string; accept: string };
}

export function bodyParsersOf(info: OperationInfo): BodyRoute {
  return {
    parsers: new Map(info.requestMediaTypes.map((type) => [type, parserFor(type, info.operationId)])),
    unsupportedMediaType: {
      detail: `This operation takes a body of type ${info.requestMediaTypes.join(' or ')} (Content-Type).`,
      accept: info.requestMediaTypes.join(', '),
    },
  };
}

function parserFor(type: string, operationId: string): express.RequestHandler {
  const parser = PARSERS[type];
  if (!parser) throw new Error(`${operationId} declares a request body of type ${type}, which the router cannot parse`);
  return parser;
}

/**
 * Reads the body with the parser of its media type (parameters such as charset aside), or answers
 * 415 when the operation does not declare that type. A request without a body (no
 * Content-Length above 0, no Transfer-Encoding) is left to validation (422 when one is required).
 */
export async function readBody(route: BodyRoute, req: Request, res: Response): Promise<void> {
  const headers = req.headers;
  if (headers['transfer-encoding'] === undefined && !(Number(headers['content-length']) > 0)) return;
  const raw = headers['content-type'];
  // The common case, `application/json` exactly, without normalising the header.
  const parser = (raw !== undefined && route.parsers.get(raw)) || route.parsers.get(mediaTypeOf(raw));
  if (!parser) {
    const { detail, accept } = route.unsupportedMediaType;
    throw bodyErrors.unsupportedMediaType(detail, { headers: { Accept: accept } });
  }
  await runParser(parser, req, res);
}

const mediaTypeOf = (contentType: string | undefined) => (contentType ?? '').split(';')[0]!.trim().toLowerCase();

function runParser(parser: express.RequestHandler, req: Request, res: Response): Promise<void> {
  return new Promise((resolve, reject) => parser(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
}
