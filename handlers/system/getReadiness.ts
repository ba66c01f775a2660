import type { Handler } from '../../src/http/handler-types';
import { checkReadiness, type Check } from '../../src/system/readiness';
import { AppError } from '../../src/http/problem';

const toApi = (c: Check) => ({ ok: c.ok, latency_ms: c.latencyMs, ...(c.error ? { error: c.error } : {}) });

export const getReadiness: Handler<'getReadiness'> = async ({ app }) => {
  const result = await checkReadiness(app);
  const checks = { database: toApi(result.database), redis: toApi(result.redis) };
  if (!result.ready) {
    const down = Object.entries(checks).filter(([, c]) => !c.ok).map(([name]) => name);
    const detail = result.shuttingDown ? 'Not ready: shutting down; requests still in flight are finished.' : `Not ready: ${down.join(', ')} unreachable.`;
    throw new AppError('unavailable', 503, detail, {
      headers: { 'Retry-After': '5' },
      fields: { checks },
    });
  }
  return { status: 200, body: { status: 'ready', checks } };
};
