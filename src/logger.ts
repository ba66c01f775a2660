import winston from 'winston';

export type Logger = winston.Logger;

/** JSON lines on stdout, one event per line; `silent` turns logging off (tests). */
export function createLogger(level: string): Logger {
  return winston.createLogger({
    level: level === 'silent' ? 'error' : level,
    silent: level === 'silent',
    format: winston.format.combine(winston.format.timestamp(), winston.format.errors({ stack: true }), winston.format.json()),
    transports: [new winston.transports.Console()],
  });
}
