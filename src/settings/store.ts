// Runtime setting overrides and their history.
import type { Knex } from 'knex';
import type { SettingValue } from '../config/settings-catalog';
import type { Db } from '../platform/database';


export interface SettingRow {
  key: string;
  /** null: no override (the default applies). */
  value: SettingValue | null;
  version: number;
  updated_at: Date;
  updated_by: string;
}

export interface HistoryRow {
  version: number;
  at: Date;
  by: string;
  reason: string;
  action: 'updated' | 'reset';
  value_before: SettingValue;
  value_after: SettingValue;
}

/** Every stored override (the table holds one row per setting ever changed: a few dozen at most). */
export async function readOverrides(db: Db): Promise<{ key: string; value: SettingValue }[]> {
  return db('runtime_settings').select('key', 'value').whereNotNull('value');
}

export async function readSettings(db: Db): Promise<SettingRow[]> {
  return db('runtime_settings').select('*');
}

export async function readSetting(db: Db, key: string): Promise<SettingRow | null> {
  return (await db('runtime_settings').where({ key }).first()) ?? null;
}

/** The setting's row, locked for this transaction (created at version 1 when it has none yet). */
export async function lockSetting(trx: Knex.Transaction, key: string, at: Date, by: string): Promise<SettingRow> {
  await trx.raw('insert into runtime_settings (key, value, version, updated_at, updated_by) values (?, null, 1, ?, ?) on conflict (key) do nothing', [key, at, by]);
  return trx('runtime_settings').where({ key }).forUpdate().first();
}

export async function writeSetting(trx: Knex.Transaction, row: SettingRow, history: Omit<HistoryRow, 'version' | 'at' | 'by'>): Promise<void> {
  await trx('runtime_settings')
    .where({ key: row.key })
    .update({ value: row.value === null ? null : JSON.stringify(row.value), version: row.version, updated_at: row.updated_at, updated_by: row.updated_by });
  await trx('runtime_setting_history').insert({
    key: row.key,
    version: row.version,
    at: row.updated_at,
    by: row.updated_by,
    reason: history.reason,
    action: history.action,
    value_before: JSON.stringify(history.value_before),
    value_after: JSON.stringify(history.value_after),
  });
}

/** Newest first (highest version first), `limit + 1` rows from below `beforeVersion`. */
export async function listHistory(db: Db, key: string, limit: number, beforeVersion?: number): Promise<HistoryRow[]> {
  const q = db('runtime_setting_history').select('version', 'at', 'by', 'reason', 'action', 'value_before', 'value_after').where({ key });
  if (beforeVersion !== undefined) q.where('version', '<', beforeVersion);
  return q.orderBy('version', 'desc').limit(limit + 1);
}
