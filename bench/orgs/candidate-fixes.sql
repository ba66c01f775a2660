-- NOT the shipped schema: two changes to db/migrations/20261123100000_tenants.ts that this
-- benchmark points at, to try on its scratch database only:
--
--   npm run bench:orgs -- --apply-sql bench/orgs/candidate-fixes.sql
--
-- 1. app_member_org_ids() collects every organisation of the acting user, once per policy
--    reference per statement (a project-list request evaluates it 3 times): for a member of 1,000
--    organisations that is ~0.5 ms each. Inside /v1/orgs/{orgId} (app.org_id set) the policies
--    already require org_id = app.org_id, so only that one membership matters: look it up alone.
--    In PL/pgSQL, whose statements keep their plans for the session: a LANGUAGE sql function that
--    cannot be inlined (SECURITY DEFINER) plans its body again in every statement that calls it.
--
-- 2. Under the policies the planner estimates 1 row for `org_id = ANY($0) AND org_id = $1` and
--    picks projects_org_id_name_key (org_id, lower(name)) for the project list, then sorts every
--    project of the organisation (2,600 here) for the first 51. With the name first, that index no
--    longer serves "the projects of an organisation", and the list walks projects_org_id_id_idx in
--    order. Same columns, same name: ON CONFLICT (org_id, lower(name)) and the 23505 constraint
--    name that src/projects/store.ts checks are unchanged.

create or replace function app_member_org_ids() returns text[] language plpgsql stable security definer
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

drop index projects_org_id_name_key;
create unique index projects_org_id_name_key on projects (lower(name), org_id);
analyze projects;
