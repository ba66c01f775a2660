// Domain → API shapes for releases and instances (one place, also used by /ops/system).
import type { components } from '../../codegen/api-types';
import type { Instance, Release } from '../../src/releases/service';

export function toApiRelease(release: Release): components['schemas']['Release'] {
  return {
    id: release.id,
    version: release.version,
    commit: release.commit,
    built_at: release.builtAt?.toISOString() ?? null,
    first_seen_at: release.firstSeenAt.toISOString(),
    last_seen_at: release.lastSeenAt.toISOString(),
  };
}

export function toApiInstance(instance: Instance): components['schemas']['Instance'] {
  return {
    id: instance.id,
    hostname: instance.hostname,
    pid: instance.pid,
    release: toApiRelease(instance.release),
    started_at: instance.startedAt.toISOString(),
    last_heartbeat_at: instance.lastHeartbeatAt.toISOString(),
    stopped_at: instance.stoppedAt?.toISOString() ?? null,
    running: instance.running,
  };
}
