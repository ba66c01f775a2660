// OpenTelemetry traces (README "Traces"): on only when the environment names where spans go
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_TRACES_EXPORTER);
// otherwise off and free: the SDK is not even loaded, nothing is patched, no provider or span
// processor is registered, and every helper below is one null check.
//
// src/main.ts imports this file first: the instrumentations patch pg, ioredis and http as they are
// required, so the SDK must start before anything requires them. That is also why the switch is
// read from process.env here rather than from src/config (which loads later); the SDK reads every
// other OTEL_* variable itself.
import type { TracingSdk } from './tracing-sdk';

/** Whether the environment turns tracing on (OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none keep it off). */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_TRACES_EXPORTER);
}

// Loaded lazily so that with tracing off not one module of the SDK is read: a synchronous,
// conditional require (an import would load the SDK always, and an `await import()` would start it
// after pg and ioredis are required).
function loadSdk(): TracingSdk {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- see above
  const { startTracing } = require('./tracing-sdk') as typeof import('./tracing-sdk');
  return startTracing();
}

const sdk: TracingSdk | null = tracingRequested(process.env) ? loadSdk() : null;

/** Whether spans are being recorded in this process (logger.ts adds trace ids to log lines only then). */
export const tracingEnabled = sdk !== null;

/** The W3C traceparent of the active span (a run stores it to continue its request's trace); null when off or outside a span. */
export function currentTraceparent(): string | null {
  return sdk ? sdk.currentTraceparent() : null;
}

/**
 * Runs `fn` inside a new span (internal, or `consumer` for a job attempt) whose parent is the
 * given traceparent, else the active span. With tracing off, just runs `fn`.
 */
export function inSpan<T>(
  name: string,
  opts: { kind?: 'internal' | 'consumer' | 'client'; parent?: string | null; attributes?: Record<string, string | number | boolean> },
  fn: () => Promise<T>,
): Promise<T> {
  return sdk ? sdk.inSpan(name, opts, fn) : fn();
}

/** Adds the active span's trace_id and span_id to a log event (the format logger.ts adds when tracing is on). */
export function addTraceIds(info: Record<string, unknown>): void {
  sdk?.addTraceIds(info);
}

/** Ends tracing: exports the spans still buffered. Called last on shutdown. */
export async function shutdownTracing(): Promise<void> {
  await sdk?.shutdown();
}
