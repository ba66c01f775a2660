import type { Knex } from 'knex';

// Social sign-in (DESIGN 2): identities linked to accounts, the browser flow's single-use states,
// the native flow's single-use nonces, and the provider notifications already handled. Secrets
// the client holds (state, its binding cookie, nonces) are stored only as SHA-256 hashes; the
// PKCE verifier and the OpenID nonce of the browser flow are derived from the binding cookie, so
// nothing here completes a sign-in on its own. No row-level security: account data, like users
// and sessions.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table identities (
      id text primary key,                          -- idn_<ulid>
      user_id text not null references users(id) on delete cascade,
      provider text not null,                       -- provider_a | provider_b
      subject text not null,                        -- the provider's sub claim
      email text,                                   -- as the provider last reported it (may be a relay address)
      email_verified boolean not null default false,
      email_forwarding boolean not null default true, -- provider_b's email-disabled / email-enabled notifications
      created_at timestamptz not null,
      last_used_at timestamptz not null,
      constraint identities_provider_subject_key unique (provider, subject),
      constraint identities_user_provider_key unique (user_id, provider)
    )`);
  // GET /v1/auth/identities: newest first, keyset pages.
  await knex.raw('create index identities_user_id_id_idx on identities (user_id, id desc)');

  await knex.raw(`
    create table social_states (
      state_hash bytea primary key,
      binding_hash bytea not null,                  -- sha-256 of the state-binding cookie
      provider text not null,
      intent text not null,                         -- login | link
      user_id text references users(id) on delete cascade, -- intent=link: who links
      redirect_to text not null,
      created_at timestamptz not null,
      expires_at timestamptz not null,
      used_at timestamptz
    )`);
  await knex.raw('create index social_states_expires_at_idx on social_states (expires_at)');

  await knex.raw(`
    create table social_nonces (
      nonce_hash bytea primary key,
      provider text not null,
      created_at timestamptz not null,
      expires_at timestamptz not null,
      used_at timestamptz
    )`);
  await knex.raw('create index social_nonces_expires_at_idx on social_nonces (expires_at)');

  await knex.raw(`
    create table social_notifications (
      provider text not null,
      jti text not null,
      received_at timestamptz not null,
      primary key (provider, jti)
    )`);
  await knex.raw('create index social_notifications_received_at_idx on social_notifications (received_at)');

  // Which identity a session (or a sign-in waiting for its second factor) was signed in with, so a
  // provider's consent-revoked / account-delete notification can end exactly those sessions.
  await knex.raw('alter table sessions add column identity_id text references identities(id) on delete set null');
  await knex.raw('create index sessions_identity_id_idx on sessions (identity_id) where identity_id is not null');
  await knex.raw('alter table mfa_challenges add column identity_id text references identities(id) on delete cascade');

  // An account an operator disabled: every way of signing in answers 403 `account_disabled`.
  await knex.raw('alter table users add column disabled_at timestamptz');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table users drop column disabled_at');
  await knex.raw('alter table mfa_challenges drop column identity_id');
  await knex.raw('alter table sessions drop column identity_id');
  await knex.raw('drop table social_notifications');
  await knex.raw('drop table social_nonces');
  await knex.raw('drop table social_states');
  await knex.raw('drop table identities');
}
