// What /ops/system asks the database about itself.
import type { Db } from '../platform/database';

/** The server's version, as `show server_version` reports it (e.g. "16.4 (Debian 16.4-1)"). */
export async function databaseServerVersion(db: Db): Promise<string> {
  const { rows } = await db.raw<{ rows: { server_version: string }[] }>('show server_version');
  return rows[0]!.server_version;
}
