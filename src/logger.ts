import winston from 'winston';

export type Logger = winston.Logger;

/** JSON lines on stdout, one event per line; `silent` turns logging off (tests). */
export function createLogger(level: string): Logger {
  const logger = winston.createLogger({
    level: level === 'silent' ? 'error' : level,
    silent: level === 'silent',
    format: winston.format.combine(winston.format.timestamp(), winston.format.errors({ stack: true }), winston.format.json()),
    transports: [new winston.transports.Console()],
  });
  // winston runs every event through its stream and formats (timestamp, JSON) before the transport
  // drops the ones below its level: a filtered `info` per job or request cost as much as a written
  // one. Events below the level now end at the call. The level is read once: set it at creation.
  for (const name of Object.keys(logger.levels)) {
    if (!logger.isLevelEnabled(name)) (logger as unknown as Record<string, unknown>)[name] = () => logger;
  }
  return logger;
}
