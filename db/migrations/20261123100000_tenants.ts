import type { Knex } from 'knex';

// The tenants: organisations, their memberships, invitations and projects, behind two walls.
// The first is the application's own queries (each names its organisation). The second is
// row-level security: the service connects as a role that is not the owner of these tables, and
// each request's transaction says who is acting (`app.user_id`) and, under /v1/orgs/{orgId}, in
// which organisation (`app.org_id`) with set_config(…, true). A row is visible only to members of
// its organisation, and only in the organisation of the path when there is one, so a query that
// forgets its filter still returns nothing of another tenant.
//
// The helper functions that read memberships run as their owner (SECURITY DEFINER, fixed
// search_path): a policy on memberships cannot query memberships itself without recursing.
// Policies call them as `(select f())`, an InitPlan evaluated once per statement, not per row.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table organisations (
      id text primary key,                    -- org_<ulid>
      name text not null,
      slug text not null,
      created_by text not null,               -- the founder's user id (kept as a pseudonym after account deletion)
      member_count integer not null default 0, -- kept in step by every membership change, in its transaction
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      deleted_at timestamptz
    );
    -- Slugs stay reserved while an organisation is soft-deleted, until the purge.
    create unique index organisations_slug_key on organisations (slug);
    create index organisations_deleted_at_idx on organisations (deleted_at) where deleted_at is not null;

    create table memberships (
      org_id text not null references organisations (id) on delete cascade,
      user_id text not null references users (id) on delete cascade,
      role text not null check (role in ('owner', 'admin', 'member')),
      created_at timestamptz not null default now(),
      primary key (org_id, user_id)
    );
    -- A user's organisations, newest first; and the policy helper's lookup.
    create index memberships_user_id_org_id_idx on memberships (user_id, org_id desc) include (role);
    -- Members of an organisation, oldest membership first.
    create index memberships_org_id_created_at_idx on memberships (org_id, created_at, user_id);

    create table invitations (
      id text primary key,                    -- inv_<ulid>
      org_id text not null references organisations (id) on delete cascade,
      email text not null,                    -- lower-cased
      role text not null check (role in ('admin', 'member')),
      token_hash bytea not null,              -- sha-256 of the token; the token is only in the mailed link
      invited_by text not null,               -- user id (kept as a pseudonym after account deletion)
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      accepted_at timestamptz,
      accepted_by text,
      revoked_at timestamptz
    );
    create unique index invitations_token_hash_key on invitations (token_hash);
    -- At most one unanswered invitation per address and organisation (expired ones are closed
    -- by the next invitation to the address).
    create unique index invitations_open_email_key on invitations (org_id, email) where accepted_at is null and revoked_at is null;
    -- Open invitations of an organisation, newest first.
    create index invitations_open_org_id_id_idx on invitations (org_id, id desc) where accepted_at is null and revoked_at is null;

    create table projects (
      id text primary key,                    -- prj_<ulid>
      org_id text not null references organisations (id) on delete cascade,
      name text not null,                     -- trimmed
      description text,
      created_by text not null,               -- user id (kept as a pseudonym after account deletion)
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    -- Name first: an index led by org_id would tempt the planner (its estimates under the policies
    -- are poor) to read and sort every project of an organisation for the list's first page.
    create unique index projects_org_id_name_key on projects (lower(name), org_id);
    -- Projects of an organisation, newest first (ids sort by creation time).
    create index projects_org_id_id_idx on projects (org_id, id desc);

    create function app_user_id() returns text language sql stable
      as $$ select nullif(current_setting('app.user_id', true), '') $$;
    create function app_org_id() returns text language sql stable
      as $$ select nullif(current_setting('app.org_id', true), '') $$;

    -- The organisations the acting user belongs to; with an organisation in the path, at most
    -- that one (the policies need no other, and a member of 1,000 organisations would otherwise
    -- collect all of them for every statement). PL/pgSQL keeps its plans for the session; a
    -- SECURITY DEFINER LANGUAGE sql function would be planned again in every statement.
    create function app_member_org_ids() returns text[] language plpgsql stable security definer
      set search_path = pg_catalog, public
      as $$
      declare
        acting_user text := nullif(current_setting('app.user_id', true), '');
        acting_org text := nullif(current_setting('app.org_id', true), '');
        ids text[];
      begin
        if acting_org is null then
          select coalesce(array_agg(org_id), '{}') into ids from memberships where user_id = acting_user;
        else
          select coalesce(array_agg(org_id), '{}') into ids from memberships where user_id = acting_user and org_id = acting_org;
        end if;
        return ids;
      end
      $$;

    -- Entering an organisation of the path, in one round trip: sets the acting user and
    -- organisation for the rest of the transaction (as Services.actingAs does) and answers the
    -- organisation with the user's role in it, locked when asked; no row for a non-member.
    create function app_enter_org(acting_user text, target_org text, lock_org boolean)
      returns table (id text, name text, slug text, member_count integer, created_at timestamptz, updated_at timestamptz, deleted_at timestamptz, role text)
      language plpgsql volatile security definer
      set search_path = pg_catalog, public
      as $$
      begin
        perform set_config('app.user_id', acting_user, true), set_config('app.org_id', target_org, true), set_config('app.invitation_id', '', true);
        if lock_org then
          return query select o.id, o.name, o.slug, o.member_count, o.created_at, o.updated_at, o.deleted_at, m.role
            from organisations o join memberships m on m.org_id = o.id and m.user_id = acting_user
            where o.id = target_org for update of o;
        else
          return query select o.id, o.name, o.slug, o.member_count, o.created_at, o.updated_at, o.deleted_at, m.role
            from organisations o join memberships m on m.org_id = o.id and m.user_id = acting_user
            where o.id = target_org;
        end if;
      end
      $$;

    -- The acting user's organisations, newest first (GET /v1/orgs): the rule the policies apply
    -- (one's own memberships), checked here, with no policy in the plan: under the policies the
    -- planner's row estimates led it to read and sort every membership of the user, which cost a
    -- member of 1,000 organisations a quarter of the throughput.
    create function app_member_organisations(acting_user text, before_org text, deleted_since timestamptz, max_rows integer)
      returns table (id text, name text, slug text, member_count integer, created_at timestamptz, updated_at timestamptz, deleted_at timestamptz, role text)
      language plpgsql stable security definer
      set search_path = pg_catalog, public
      as $$
      begin
        if acting_user is distinct from nullif(current_setting('app.user_id', true), '') then
          return; -- only the acting user's own list
        end if;
        if before_org is null then
          return query select o.id, o.name, o.slug, o.member_count, o.created_at, o.updated_at, o.deleted_at, m.role
            from memberships m join organisations o on o.id = m.org_id
            where m.user_id = acting_user and (o.deleted_at is null or (m.role = 'owner' and o.deleted_at > deleted_since))
            order by m.org_id desc limit max_rows;
        else
          return query select o.id, o.name, o.slug, o.member_count, o.created_at, o.updated_at, o.deleted_at, m.role
            from memberships m join organisations o on o.id = m.org_id
            where m.user_id = acting_user and m.org_id < before_org
              and (o.deleted_at is null or (m.role = 'owner' and o.deleted_at > deleted_since))
            order by m.org_id desc limit max_rows;
        end if;
      end
      $$;

    -- The project list (the hottest tenant read) in one statement and no explicit transaction:
    -- sets the context (set_config(…, true) lasts for this statement's own transaction), reads
    -- the caller's membership and returns the page, every query under the policies (SECURITY
    -- INVOKER). A member gets at least one row (its role, and null project columns when the
    -- page is empty); a non-member none.
    create function app_org_projects(acting_user text, target_org text, before_id text, max_rows integer)
      returns table (member_role text, org_deleted_at timestamptz, id text, org_id text, name text, description text,
                     created_by text, created_at timestamptz, updated_at timestamptz)
      language plpgsql volatile security invoker
      as $$
      declare
        found_role text;
        found_deleted_at timestamptz;
      begin
        perform set_config('app.user_id', acting_user, true), set_config('app.org_id', target_org, true), set_config('app.invitation_id', '', true);
        select m.role, o.deleted_at into found_role, found_deleted_at
          from public.organisations o join public.memberships m on m.org_id = o.id and m.user_id = acting_user
          where o.id = target_org;
        if found_role is null then
          return;
        end if;
        if before_id is null then
          return query select found_role, found_deleted_at, p.id, p.org_id, p.name, p.description, p.created_by, p.created_at, p.updated_at
            from public.projects p where p.org_id = target_org order by p.id desc limit max_rows;
        else
          return query select found_role, found_deleted_at, p.id, p.org_id, p.name, p.description, p.created_by, p.created_at, p.updated_at
            from public.projects p where p.org_id = target_org and p.id < before_id order by p.id desc limit max_rows;
        end if;
        if not found then
          return query select found_role, found_deleted_at, null::text, null::text, null::text, null::text, null::text, null::timestamptz, null::timestamptz;
        end if;
      end
      $$;

    -- Whether the acting user may insert their own membership with this role: as the founder of
    -- an organisation that has no members yet (its first owner), or through the open, unexpired
    -- invitation named by app.invitation_id, addressed to the user's verified email.
    create function app_may_join(target_org text, target_role text) returns boolean language sql stable security definer
      set search_path = pg_catalog, public
      as $$
        select (
          target_role = 'owner'
          and exists (select 1 from organisations o where o.id = target_org and o.created_by = nullif(current_setting('app.user_id', true), ''))
          and not exists (select 1 from memberships m where m.org_id = target_org)
        ) or exists (
          select 1
          from invitations i
          join users u on u.id = nullif(current_setting('app.user_id', true), '')
          where i.id = nullif(current_setting('app.invitation_id', true), '')
            and i.org_id = target_org and i.role = target_role
            and i.accepted_at is null and i.revoked_at is null and i.expires_at > now()
            and u.email_verified_at is not null and i.email = lower(u.email)
        )
      $$;

    -- The invitation a token names, found before its reader is a member (accept). Only the
    -- columns accept needs; a caller must already hold the token to learn anything.
    create function app_invitation_by_token_hash(hash bytea)
      returns table (id text, org_id text, email text, role text, expires_at timestamptz, accepted_at timestamptz, revoked_at timestamptz, org_deleted_at timestamptz)
      language sql stable security definer
      set search_path = pg_catalog, public
      as $$
        select i.id, i.org_id, i.email, i.role, i.expires_at, i.accepted_at, i.revoked_at, o.deleted_at
        from invitations i join organisations o on o.id = i.org_id
        where i.token_hash = hash
      $$;

    -- Slugs are unique across every organisation, but a user sees only theirs: this says which
    -- of base, base-2, base-3… are taken (what a 409 on each would tell anyway).
    create function app_slugs_taken(base text) returns setof text language sql stable security definer
      set search_path = pg_catalog, public
      as $$ select slug from organisations where slug = base or (slug like base || '-%' and substr(slug, length(base) + 2) ~ '^[0-9]+$') $$;

    -- Retention: removes up to batch_size rows belonging to organisations soft-deleted before
    -- cutoff (projects first, then invitations and memberships, then the organisations), so no
    -- statement holds long locks; returns how many rows went. Called until it returns 0.
    create function app_purge_deleted_organisations(cutoff timestamptz, batch_size integer) returns integer
      language plpgsql volatile security definer
      set search_path = pg_catalog, public
      as $$
      declare
        removed integer;
      begin
        delete from projects where ctid = any (array(
          select p.ctid from projects p join organisations o on o.id = p.org_id
          where o.deleted_at < cutoff limit batch_size));
        get diagnostics removed = row_count;
        if removed > 0 then return removed; end if;
        delete from invitations where ctid = any (array(
          select i.ctid from invitations i join organisations o on o.id = i.org_id
          where o.deleted_at < cutoff limit batch_size));
        get diagnostics removed = row_count;
        if removed > 0 then return removed; end if;
        delete from memberships where ctid = any (array(
          select m.ctid from memberships m join organisations o on o.id = m.org_id
          where o.deleted_at < cutoff limit batch_size));
        get diagnostics removed = row_count;
        if removed > 0 then return removed; end if;
        delete from organisations where id = any (array(
          select o.id from organisations o where o.deleted_at < cutoff limit batch_size));
        get diagnostics removed = row_count;
        return removed;
      end
      $$;

    alter table organisations enable row level security;
    alter table memberships enable row level security;
    alter table invitations enable row level security;
    alter table projects enable row level security;

    -- Organisations: members see theirs (one index lookup of their own membership per row);
    -- anyone signed in may found one (as its creator). No delete policy: organisations are
    -- soft-deleted, and purged only by the function above.
    create policy organisations_member on organisations for select
      using (((select app_org_id()) is null or id = (select app_org_id()))
             and exists (select 1 from memberships m where m.org_id = organisations.id and m.user_id = (select app_user_id())));
    create policy organisations_member_update on organisations for update
      using (((select app_org_id()) is null or id = (select app_org_id()))
             and exists (select 1 from memberships m where m.org_id = organisations.id and m.user_id = (select app_user_id())))
      with check (((select app_org_id()) is null or id = (select app_org_id()))
             and exists (select 1 from memberships m where m.org_id = organisations.id and m.user_id = (select app_user_id())));
    create policy organisations_found on organisations for insert
      with check (created_by = (select app_user_id()));

    -- Memberships: one's own, and the others of one's organisations (the second branch is
    -- evaluated only for rows the first does not admit); changeable and removable there; a new
    -- one only for oneself, as founder or through an invitation (app_may_join).
    create policy memberships_member on memberships for select
      using (((select app_org_id()) is null or org_id = (select app_org_id()))
             and (user_id = (select app_user_id()) or org_id = any ((select app_member_org_ids())::text[])));
    create policy memberships_member_update on memberships for update
      using (((select app_org_id()) is null or org_id = (select app_org_id()))
             and (user_id = (select app_user_id()) or org_id = any ((select app_member_org_ids())::text[])))
      with check (((select app_org_id()) is null or org_id = (select app_org_id()))
             and (user_id = (select app_user_id()) or org_id = any ((select app_member_org_ids())::text[])));
    create policy memberships_member_delete on memberships for delete
      using (((select app_org_id()) is null or org_id = (select app_org_id()))
             and (user_id = (select app_user_id()) or org_id = any ((select app_member_org_ids())::text[])));
    create policy memberships_join on memberships for insert
      with check (user_id = (select app_user_id()) and app_may_join(org_id, role));

    -- Invitations and projects: everything within the member's organisation.
    create policy invitations_member on invitations for all
      using (org_id = any ((select app_member_org_ids())::text[]) and ((select app_org_id()) is null or org_id = (select app_org_id())))
      with check (org_id = any ((select app_member_org_ids())::text[]) and ((select app_org_id()) is null or org_id = (select app_org_id())));
    create policy projects_member on projects for all
      using (org_id = any ((select app_member_org_ids())::text[]) and ((select app_org_id()) is null or org_id = (select app_org_id())))
      with check (org_id = any ((select app_member_org_ids())::text[]) and ((select app_org_id()) is null or org_id = (select app_org_id())));
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    drop table projects;
    drop table invitations;
    drop table memberships;
    drop table organisations;
    drop function app_purge_deleted_organisations(timestamptz, integer);
    drop function app_invitation_by_token_hash(bytea);
    drop function app_slugs_taken(text);
    drop function app_enter_org(text, text, boolean);
    drop function app_member_organisations(text, text, timestamptz, integer);
    drop function app_org_projects(text, text, text, integer);
    drop function app_may_join(text, text);
    drop function app_member_org_ids();
    drop function app_org_id();
    drop function app_user_id();
  `);
}
