import type { Knex } from 'knex';

// Releases and instances (DESIGN 4): every process start upserts its release and inserts an
// instance, which heartbeats until a clean shutdown records `stopped_at`. No row-level security:
// operational records, read by operators only. The application role gets its rows from the grant
// every start makes on all tables (platform/database-roles.ts), like every other table.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table releases (
      id text primary key,
      version text not null,
      commit text not null,                        -- 'unknown' when the build did not say
      built_at timestamptz,
      first_seen_at timestamptz not null,
      last_seen_at timestamptz not null,           -- the latest heartbeat of any of its instances
      constraint releases_version_commit_key unique (version, commit)
    )`);
  // GET /ops/releases: newest first, keyset pages.
  await knex.raw('create index releases_first_seen_at_id_idx on releases (first_seen_at desc, id desc)');

  await knex.raw(`
    create table instances (
      id text primary key,
      hostname text not null,
      pid integer not null,
      release_id text not null references releases(id),
      started_at timestamptz not null,
      last_heartbeat_at timestamptz not null,
      stopped_at timestamptz                       -- null while it runs, and after a crash
    )`);
  // GET /ops/releases/instances: newest first, keyset pages.
  await knex.raw('create index instances_started_at_id_idx on instances (started_at desc, id desc)');
  // The foreign key's lookups, and retention's "release left without instances".
  await knex.raw('create index instances_release_id_idx on instances (release_id)');
  // "Running now" (not stopped, recent heartbeat), and retention's silent (crashed) instances.
  await knex.raw('create index instances_live_heartbeat_idx on instances (last_heartbeat_at) where stopped_at is null');
  // Retention's stopped instances.
  await knex.raw('create index instances_stopped_at_idx on instances (stopped_at) where stopped_at is not null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table instances');
  await knex.raw('drop table releases');
}
