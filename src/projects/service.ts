// Projects of an organisation. Each operation runs through OrgService.inOrg: the caller's
// membership decides 404 and the policy module 403; changes and their audit events share the
// transaction.
import { userActor, type RequestMeta } from '../audit/service';
import type { AuditService } from '../audit/service';
import type { Scope } from '../platform/scope';
import type { OrgService } from '../orgs/service';
import type { Caller } from '../sessions/service';
import { commonErrors } from '../errors';
import { newId } from '../ids';
import { pageById, type Page, type PageRequest } from '../pagination';
import { orgErrors } from '../orgs/errors';
import * as store from './store';

export type { ProjectRow } from './store';

const nameTaken = (name: string) => orgErrors.projectNameTaken(`A project named ${name} already exists in this organisation.`);

type Deps = Scope<{ orgs: OrgService; audit: AuditService }>;

export class ProjectService {
  constructor(private readonly s: Deps) {}

  /** Newest first, a page at a time: one round trip (store.listAsMember), under the same admission rule as inOrg. */
  list(caller: Caller, orgId: string, request: PageRequest): Promise<Page<store.ProjectRow>> {
    return pageById('prj', request, async (limit, beforeId) => {
      const found = await store.listAsMember(this.s.db, caller.userId, orgId, { limit, beforeId });
      this.s.orgs.admit(found && { role: found.role, deletedAt: found.orgDeletedAt }, 'projects.read');
      return found!.projects;
    });
  }

  get(caller: Caller, orgId: string, id: string): Promise<store.ProjectRow> {
    return this.s.orgs.inOrg(this.s, caller.userId, orgId, 'projects.read', async ({ tx }) => {
      const project = await store.find(tx.db, orgId, id);
      if (!project) throw commonErrors.notFound();
      return project;
    });
  }

  /** POST /v1/orgs/{orgId}/projects: 409 `project_name_taken` (`project.created`). */
  create(caller: Caller, orgId: string, input: { name: string; description?: string | null }, meta: RequestMeta): Promise<store.ProjectRow> {
    return this.s.orgs.inOrg(this.s, caller.userId, orgId, 'projects.create', async ({ tx }) => {
      const now = tx.now();
      const project: store.ProjectRow = {
        id: newId('prj'),
        orgId,
        name: input.name.trim(),
        description: input.description ?? null,
        createdBy: caller.userId,
        createdAt: now,
        updatedAt: now,
      };
      if ((await store.insert(tx.db, project)) === 'name_taken') throw nameTaken(project.name);
      await tx.audit.record({ action: 'project.created', actor: userActor(caller.userId), target: { kind: 'project', id: project.id }, orgId, data: { name: project.name }, meta });
      return project;
    });
  }

  /** PATCH …/projects/{id}: `project.updated` naming the changed fields, when something changed. */
  update(caller: Caller, orgId: string, id: string, input: { name?: string; description?: string | null }, meta: RequestMeta): Promise<store.ProjectRow> {
    return this.s.orgs.inOrg(this.s, caller.userId, orgId, 'projects.update', async ({ tx }) => {
      const project = await store.find(tx.db, orgId, id);
      if (!project) throw commonErrors.notFound();
      const name = input.name?.trim();
      const change = {
        name: name !== undefined && name !== project.name ? name : undefined,
        description: input.description !== undefined && input.description !== project.description ? input.description : undefined,
      };
      const fields = Object.entries(change)
        .filter(([, v]) => v !== undefined)
        .map(([k]) => k);
      if (!fields.length) return project;
      const now = tx.now();
      if ((await store.update(tx.db, orgId, id, { ...change, now })) === 'name_taken') throw nameTaken(change.name!);
      await tx.audit.record({ action: 'project.updated', actor: userActor(caller.userId), target: { kind: 'project', id }, orgId, data: { fields }, meta });
      return { ...project, ...(change.name !== undefined && { name: change.name }), ...(change.description !== undefined && { description: change.description }), updatedAt: now };
    });
  }

  /** DELETE …/projects/{id}: owners and admins (`project.deleted`, keeping the name). */
  delete(caller: Caller, orgId: string, id: string, meta: RequestMeta): Promise<void> {
    return this.s.orgs.inOrg(this.s, caller.userId, orgId, 'projects.delete', async ({ tx }) => {
      const project = await store.find(tx.db, orgId, id);
      if (!project) throw commonErrors.notFound();
      await store.remove(tx.db, orgId, id);
      await tx.audit.record({ action: 'project.deleted', actor: userActor(caller.userId), target: { kind: 'project', id }, orgId, data: { name: project.name }, meta });
    });
  }
}
