import type { Knex } from 'knex';

// Second factors (DESIGN 2): the authenticator-app secret (encrypted), recovery codes (hashed),
// passkeys, sign-in challenges that wait for a second factor, and WebAuthn ceremonies. Every
// secret the client holds (challenge and ceremony tokens, recovery codes) is stored only hashed.
export async function up(knex: Knex): Promise<void> {
  // The WebAuthn user handle: random, stable per user, no personal data; made at the first registration.
  await knex.raw('alter table users add column webauthn_user_handle bytea');
  await knex.raw('create unique index users_webauthn_user_handle_key on users (webauthn_user_handle) where webauthn_user_handle is not null');

  await knex.raw(`
    create table totp_credentials (
      user_id text primary key references users(id) on delete cascade,
      secret_ciphertext bytea not null,            -- AES-256-GCM under MFA_ENCRYPTION_KEY, the user id as associated data
      enabled_at timestamptz,                      -- null: a pending setup, not yet confirmed
      pending_expires_at timestamptz,              -- a pending setup dies then
      failed_attempts integer not null default 0,  -- wrong codes against a pending setup
      last_used_step bigint not null default 0,    -- the newest 30-second step accepted: a code is never accepted twice
      created_at timestamptz not null default now()
    )`);

  await knex.raw(`
    create table recovery_codes (
      id bigserial primary key,
      user_id text not null references users(id) on delete cascade,
      code_hash bytea not null,                    -- HMAC-SHA-256 keyed by the server secret
      created_at timestamptz not null,
      used_at timestamptz
    )`);
  await knex.raw('create unique index recovery_codes_user_hash_key on recovery_codes (user_id, code_hash)');
  // The session lookup counts a user's unused codes on every request: an index-only count.
  await knex.raw('create index recovery_codes_user_unused_idx on recovery_codes (user_id) where used_at is null');

  await knex.raw(`
    create table mfa_challenges (
      id text primary key,
      token_hash bytea not null,
      user_id text not null references users(id) on delete cascade,
      first_factor text not null,                  -- password, or a social provider later
      transport text not null,
      created_at timestamptz not null,
      expires_at timestamptz not null,
      failed_attempts integer not null default 0,
      ended_at timestamptz                         -- used, or ended by the 5th wrong factor
    )`);
  await knex.raw('create unique index mfa_challenges_token_hash_key on mfa_challenges (token_hash)');
  await knex.raw('create index mfa_challenges_expires_at_idx on mfa_challenges (expires_at)');
  await knex.raw('create index mfa_challenges_user_id_idx on mfa_challenges (user_id)');

  await knex.raw(`
    create table passkeys (
      id text primary key,                         -- pky_<ulid>
      user_id text not null references users(id) on delete cascade,
      credential_id text not null,                 -- base64url, as the browser sends it
      public_key bytea not null,                   -- COSE
      sign_count bigint not null default 0,
      transports text[] not null default '{}',
      device_type text not null,                   -- singleDevice | multiDevice
      backed_up boolean not null,
      aaguid text not null,
      name text not null,
      created_at timestamptz not null,
      last_used_at timestamptz
    )`);
  await knex.raw('create unique index passkeys_credential_id_key on passkeys (credential_id)');
  await knex.raw('create index passkeys_user_id_id_idx on passkeys (user_id, id desc)');

  await knex.raw(`
    create table webauthn_ceremonies (
      id bigserial primary key,
      token_hash bytea not null,
      purpose text not null check (purpose in ('registration', 'login', 'verification', 'mfa')),
      user_id text references users(id) on delete cascade,                -- null only for a discoverable sign-in
      mfa_challenge_id text references mfa_challenges(id) on delete cascade,
      challenge text not null,                     -- the WebAuthn challenge, base64url
      name text,                                   -- registration: the name given at the start
      created_at timestamptz not null,
      expires_at timestamptz not null,
      used_at timestamptz
    )`);
  await knex.raw('create unique index webauthn_ceremonies_token_hash_key on webauthn_ceremonies (token_hash)');
  await knex.raw('create index webauthn_ceremonies_expires_at_idx on webauthn_ceremonies (expires_at)');
  await knex.raw('create index webauthn_ceremonies_user_id_idx on webauthn_ceremonies (user_id)');
  await knex.raw('create index webauthn_ceremonies_mfa_challenge_id_idx on webauthn_ceremonies (mfa_challenge_id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table webauthn_ceremonies');
  await knex.raw('drop table passkeys');
  await knex.raw('drop table mfa_challenges');
  await knex.raw('drop table recovery_codes');
  await knex.raw('drop table totp_credentials');
  await knex.raw('alter table users drop column webauthn_user_handle');
}
