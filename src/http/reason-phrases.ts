// RFC 9110 renamed two reason phrases that Node 20 still ships with their RFC 7231 names. Node
// fills every status line from `http.STATUS_CODES` (when a response sets no statusMessage), and the
// Problem `title` is read from the same table (problem.ts `reasonPhrase`), so correcting the table
// once keeps the status line and the title in agreement on every response, without touching each
// one.
import { STATUS_CODES } from 'node:http';

const RFC_9110_PHRASES: Readonly<Record<number, string>> = {
  413: 'Content Too Large',
  422: 'Unprocessable Content',
};

Object.assign(STATUS_CODES, RFC_9110_PHRASES);

export const reasonPhrase = (status: number): string => STATUS_CODES[status] ?? 'Error';
