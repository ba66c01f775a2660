import type { Knex } from 'knex';

// GET /v1/orgs in one statement, as the project list already is (app_org_projects): this function
// sets the acting context (set_config(…, true) lasts for the statement's own transaction, or for
// the rest of the caller's) and returns app_member_organisations' page. The list needed BEGIN,
// set_config, the list and COMMIT before: four round trips and a knex transaction, half the CPU
// the service spent on the route. SECURITY INVOKER, so the acting user is the one set here, as
// with app_org_projects; app_member_organisations still refuses any other user's list.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create function app_acting_member_organisations(acting_user text, before_org text, deleted_since timestamptz, max_rows integer)
      returns table (id text, name text, slug text, member_count integer, created_at timestamptz, updated_at timestamptz, deleted_at timestamptz, role text)
      language plpgsql volatile security invoker
      as $$
      begin
        perform set_config('app.user_id', acting_user, true), set_config('app.org_id', '', true), set_config('app.invitation_id', '', true);
        return query select * from public.app_member_organisations(acting_user, before_org, deleted_since, max_rows);
      end
      $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function app_acting_member_organisations(text, text, timestamptz, integer)');
}
