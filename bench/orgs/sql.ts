// The statements the service sends for the benchmarked requests, as knex generates them (and the
// session lookup's prepared statement, src/sessions/store.ts): shared by the bare SQL baseline and
// the serial SQL timings of run.ts.
export { FIND_LIVE_SESSION, FIND_LIVE_SESSION_WITH_SECOND_FACTORS } from '../../src/sessions/store';
export const SET_CONTEXT = "select set_config('app.user_id', $1, true), set_config('app.org_id', $2, true), set_config('app.invitation_id', $3, true)";
/** Entering an organisation of the path (src/orgs/store.ts enterOrg): sets the RLS context and reads the membership. */
export const ENTER_ORG = { name: 'orgs.enter', text: 'select * from app_enter_org($1, $2, $3)' };
/** The project list (src/projects/store.ts listAsMember): context, membership and page in one statement. */
export const LIST_PROJECTS_AS_MEMBER = { name: 'projects.list_as_member', text: 'select * from app_org_projects($1, $2, $3, $4)' };
// The page query inside app_org_projects (for its plan and the serial SQL times).
export const LIST_PROJECTS =
  'select "id", "org_id", "name", "description", "created_by", "created_at", "updated_at" from "projects" where "org_id" = $1 order by "id" desc limit $2';
/** src/orgs/store.ts listForUser (context and page in one statement); first page, no deleted organisations ($3 null). */
export { MEMBER_ORGANISATIONS as LIST_ORGS } from '../../src/orgs/store';
