import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../logger';
import { unavailableDependency, type DependencyMonitor } from '../platform/dependencies';
import { AppError, problems, sendProblem, toAppError } from './problem';

/** Errors from body parsing (body-parser sets `type`) before any route is matched. */
function fromBodyParser(err: { type?: string; status?: number }): AppError | null {
  if (err.type === 'entity.too.large') return problems.payloadTooLarge();
  if (err.type === 'entity.parse.failed') return problems.malformedBody();
  // Anything else body-parser refuses (bad encoding or charset, aborted body) is a bad body too.
  if (err.type) return problems.malformedBody('The request body could not be read (unsupported encoding or charset, or incomplete).');
  return null;
}

/**
 * The last middleware: everything thrown ends here and leaves as a Problem. A dependency that is
 * down is the monitor's to log (once per outage); other 5xx are logged here with their stack.
 */
export function errorHandler(logger: Logger, dependencies: DependencyMonitor) {
  return (err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const down = unavailableDependency(err);
    if (down) dependencies.failed(down, err, { request: true });
    const appError = fromBodyParser(err as { type?: string }) ?? toAppError(err);
    if (appError.status >= 500 && !down) {
      logger.error('request failed', {
        request_id: res.locals.requestId,
        operation_id: res.locals.operationId ?? null,
        status: appError.status,
        error: err instanceof Error ? { name: err.name, message: err.message, stack: err.stack } : String(err),
      });
    }
    if (res.headersSent) return res.end();
    sendProblem(res, appError);
  };
}
