// operationId → handler, one file per operation under handlers/<tag>/, each tag folder exporting its map.
import type { HandlerMap } from '../src/http/handler-types';
import { opsJobsHandlers } from './ops-jobs';
import { opsQueuesHandlers } from './ops-queues';
import { opsMailHandlers } from './ops-mail';
import { opsAuditHandlers } from './ops-audit';
import { opsSettingsHandlers } from './ops-settings';
import { opsReleasesHandlers } from './ops-releases';
import { opsSystemHandlers } from './ops-system';
import { authHandlers } from './auth';
import { sessionsHandlers } from './sessions';
import { mfaHandlers } from './mfa';
import { passkeysHandlers } from './passkeys';
import { socialHandlers } from './social';
import { orgsHandlers } from './orgs';
import { membersHandlers } from './members';
import { invitationsHandlers } from './invitations';
import { projectsHandlers } from './projects';
import { ping } from './example/ping';
import { echo } from './example/echo';
import { getVersion } from './system/getVersion';
import { getHealth } from './system/getHealth';
import { getReadiness } from './system/getReadiness';
import { getDocs } from './system/getDocs';
import { getDocsScript } from './system/getDocsScript';
import { getOpenApiYaml } from './system/getOpenApiYaml';
import { getOpenApiJson } from './system/getOpenApiJson';

export const handlers: HandlerMap = {
  ping,
  echo,
  getVersion,
  getHealth,
  getReadiness,
  getDocs,
  getDocsScript,
  getOpenApiYaml,
  getOpenApiJson,
  ...opsJobsHandlers,
  ...opsQueuesHandlers,
  ...opsMailHandlers,
  ...opsAuditHandlers,
  ...opsSettingsHandlers,
  ...opsReleasesHandlers,
  ...opsSystemHandlers,
  ...authHandlers,
  ...sessionsHandlers,
  ...mfaHandlers,
  ...passkeysHandlers,
  ...socialHandlers,
  ...orgsHandlers,
  ...membersHandlers,
  ...invitationsHandlers,
  ...projectsHandlers,
};
