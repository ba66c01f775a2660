import { Writable } from 'node:stream';
import winston from 'winston';
import type { Logger } from '../../src/logger';

/** A logger at debug level that keeps every line it writes (JSON text) in `lines`. */
export function capturingLogger(lines: string[]): Logger {
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return winston.createLogger({ level: 'debug', format: winston.format.json(), transports: [new winston.transports.Stream({ stream })] });
}

/** The parsed lines whose message is `message`. */
export function linesWith(lines: string[], message: string): Record<string, any>[] {
  return lines.map((l) => JSON.parse(l) as Record<string, any>).filter((l) => l.message === message);
}
