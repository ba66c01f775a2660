// Job kinds are declared in code: a name, default configuration and a handler.
import type { Logger } from '../logger';
import type { JobConfig } from './config';

interface JobRunInfo {
  id: number;
  kind: string;
  attempt: number;
}

interface JobContext<App> {
  /** The application context (its root services: `app.services`). */
  app: App;
  run: JobRunInfo;
  /** Aborted on cancel and on timeout: long work must check it (or pass it on) and stop. */
  signal: AbortSignal;
  logger: Logger;
}

export interface JobKind<App = unknown, Payload = object> {
  name: string;
  description: string;
  defaults: JobConfig;
  /** True when runs need a payload from the application (cannot be run empty or scheduled). */
  needsPayload: boolean;
  handle(payload: Payload, ctx: JobContext<App>): Promise<void>;
}

export class JobRegistry<App> {
  private readonly kinds = new Map<string, JobKind<App>>();

  constructor(kinds: JobKind<App>[]) {
    for (const kind of kinds) {
      if (this.kinds.has(kind.name)) throw new Error(`job kind ${kind.name} declared twice`);
      this.kinds.set(kind.name, kind);
    }
  }

  get(name: string): JobKind<App> | undefined {
    return this.kinds.get(name);
  }

  /** Every kind, sorted by name. */
  all(): JobKind<App>[] {
    return [...this.kinds.values()].sort((a, b) => a.name.localeCompare(b.name));
  }
}

/** Thrown by a handler for a failure no retry can fix: the run is discarded at once. */
export { UnrecoverableError } from 'bullmq';
