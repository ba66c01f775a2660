// Runtime settings as operators see and change them (GET/PUT/DELETE /ops/settings/{key}).
//
// A change locks the setting's row (created at version 1 when it has none), checks the version,
// writes the override, a history entry and the audit event in one transaction; after the commit
// this instance applies it at once and announces it to the others (runtime.ts).
import type { Actor, RequestMeta } from '../audit/service';
import type { RuntimeSettings } from './runtime';
import type { AuditService } from '../audit/service';
import type { Scope } from '../platform/scope';
import { commonErrors } from '../errors';
import { DEFAULT_LIMIT, decodeCursor, page, type PageRequest } from '../pagination';
import { checkValue, definitionOf, isSettingKey, SETTING_KEYS, type SettingKey, type SettingType, type SettingValue } from '../config/settings-catalog';
import { invalidSettingValue } from './errors';
import * as store from './store';

export interface Setting {
  key: SettingKey;
  value: SettingValue;
  default: SettingValue;
  type: SettingType;
  description: string;
  allowed: string[] | null;
  modified: boolean;
  source: 'override' | 'environment' | 'code';
  environmentVariable: string | null;
  version: number;
  updatedAt: Date | null;
  updatedBy: string | null;
}

export type SettingChange = store.HistoryRow;

type By = { actor: Actor; meta: RequestMeta };

const isVersionCursor = (k: unknown): k is { v: number } => {
  const v = (k as { v?: unknown } | null | undefined)?.v;
  return typeof v === 'number' && Number.isInteger(v);
};

type Deps = Scope<{ runtimeSettings: RuntimeSettings; audit: AuditService }>;

export class SettingsService {
  constructor(private readonly s: Deps) {}

  async list(): Promise<Setting[]> {
    const rows = new Map((await store.readSettings(this.s.db)).map((r) => [r.key, r]));
    return SETTING_KEYS.map((key) => this.view(key, rows.get(key) ?? null));
  }

  async get(key: string): Promise<Setting> {
    const known = this.known(key);
    return this.view(known, await store.readSetting(this.s.db, known));
  }

  async update(key: string, input: { value: unknown; version: number; reason: string }, by: By): Promise<Setting> {
    const known = this.known(key);
    const checked = checkValue(known, input.value);
    if ('error' in checked) throw invalidSettingValue(known, checked.error);
    return this.change(known, input, by, (row) => (row.value === checked.value ? null : { value: checked.value, action: 'updated' }));
  }

  async reset(key: string, input: { version: number; reason: string }, by: By): Promise<Setting> {
    return this.change(this.known(key), input, by, (row) => (row.value === null ? null : { value: null, action: 'reset' }));
  }

  /** Newest first, a page at a time. */
  async history(key: string, query: PageRequest) {
    const known = this.known(key);
    const limit = query.limit ?? DEFAULT_LIMIT;
    const after = decodeCursor(query.cursor, isVersionCursor);
    const rows = await store.listHistory(this.s.db, known, limit, after?.v);
    return page(rows, limit, (last) => ({ v: last.version }));
  }

  private known(key: string): SettingKey {
    if (!isSettingKey(key)) throw commonErrors.notFound(`No setting ${key}.`);
    return key;
  }

  /** `next` answers the new override (null: none) or null when nothing changes. */
  private async change(
    key: SettingKey,
    input: { version: number; reason: string },
    by: By,
    next: (row: store.SettingRow) => { value: SettingValue | null; action: 'updated' | 'reset' } | null,
  ): Promise<Setting> {
    const runtime = this.s.runtimeSettings;
    const changed = await this.s.transaction(async (tx) => {
      const at = tx.now();
      const row = await store.lockSetting(tx.trx!, key, at, by.actor.id!);
      if (row.version !== input.version) {
        throw commonErrors.versionConflict(`The setting is at version ${row.version}; you sent version ${input.version}.`);
      }
      const change = next(row);
      if (!change) return false;
      const valueBefore = row.value ?? runtime.default(key);
      const valueAfter = change.value ?? runtime.default(key);
      const version = row.version + 1;
      await store.writeSetting(tx.trx!, { key, value: change.value, version, updated_at: at, updated_by: by.actor.id! }, {
        reason: input.reason,
        action: change.action,
        value_before: valueBefore,
        value_after: valueAfter,
      });
      await tx.audit.record({
        action: change.action === 'updated' ? 'ops.setting.updated' : 'ops.setting.reset',
        actor: by.actor,
        target: { kind: 'setting', id: key },
        data: { key, version, value_before: valueBefore, value_after: valueAfter, reason: input.reason },
        meta: by.meta,
      });
      return true;
    });
    if (changed) await runtime.changed(key);
    return this.get(key);
  }

  private view(key: SettingKey, row: store.SettingRow | null): Setting {
    const def = definitionOf(key);
    const fallback = this.s.runtimeSettings.default(key);
    // An override a deploy's stricter rules refuse is ignored, here as in runtime.ts.
    const override = row?.value != null && !('error' in checkValue(key, row.value)) ? row.value : null;
    return {
      key,
      value: override ?? fallback,
      default: fallback,
      type: def.type,
      description: def.description,
      allowed: def.allowed,
      modified: override !== null,
      source: override !== null ? 'override' : this.s.config.settingDefaults.fromEnvironment.has(key) ? 'environment' : 'code',
      environmentVariable: def.env,
      version: row?.version ?? 1,
      updatedAt: row && row.version > 1 ? row.updated_at : null,
      updatedBy: row && row.version > 1 ? row.updated_by : null,
    };
  }
}

