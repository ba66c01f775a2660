// Settings and their changes as the API shows them.
import type { Setting, SettingChange } from '../../src/settings/service';

export function toApiSetting(s: Setting) {
  return {
    key: s.key,
    value: s.value,
    default: s.default,
    type: s.type,
    description: s.description,
    allowed: s.allowed,
    modified: s.modified,
    source: s.source,
    environment_variable: s.environmentVariable,
    version: s.version,
    updated_at: s.updatedAt?.toISOString() ?? null,
    updated_by: s.updatedBy,
  };
}

export function toApiSettingChange(c: SettingChange) {
  return {
    version: c.version,
    at: c.at.toISOString(),
    by: c.by,
    reason: c.reason,
    action: c.action,
    value_before: c.value_before,
    value_after: c.value_after,
  };
}
