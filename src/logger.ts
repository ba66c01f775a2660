import winston from 'winston';
import { addTraceIds, tracingEnabled } from './platform/tracing';

export type Logger = winston.Logger;

// With tracing on, each line written inside a traced request or job run carries its trace_id and
// span_id (src/platform/tracing.ts). Winston formats an event synchronously within the call that
// logs it, so the active span is the caller's. With tracing off the format is not there at all.
const traceIds = winston.format((info) => {
  addTraceIds(info);
  return info;
});

/** JSON lines on stdout, one event per line; `silent` turns logging off (tests). */
export function createLogger(level: string): Logger {
  const formats = [winston.format.timestamp(), winston.format.errors({ stack: true }), ...(tracingEnabled ? [traceIds()] : []), winston.format.json()];
  const logger = winston.createLogger({
    level: level === 'silent' ? 'error' : level,
    silent: level === 'silent',
    format: winston.format.combine(...formats),
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
