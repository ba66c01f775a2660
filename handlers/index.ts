// operationId → handler. Every operation of openapi.yaml is either here or in `pendingOperations`
// (a test checks both ways).
import type { HandlerMap, OperationId } from './types';
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
};

/**
 * Operations whose domain logic belongs to a later issue: they are routed, authenticated and
 * validated like any other, then answer 501 `not_implemented`. README lists them.
 */
export const pendingOperations: ReadonlySet<OperationId> = new Set<OperationId>([
  // auth, sessions (accounts and sessions)
  'register', 'login', 'completeMfaLogin', 'startMfaPasskey', 'logout', 'logoutAll', 'getMe', 'deleteMe',
  'listSessions', 'revokeSession', 'verifyEmail', 'resendVerificationEmail', 'changePassword',
  'forgotPassword', 'resetPassword',
  // mfa, passkeys, social
  'startTotpSetup', 'confirmTotp', 'disableTotp', 'regenerateRecoveryCodes',
  'listPasskeys', 'startPasskeyRegistration', 'addPasskey', 'startPasskeyLogin', 'passkeyLogin',
  'startPasskeyVerification', 'renamePasskey', 'deletePasskey',
  'startSocialLogin', 'createSocialNonce', 'providerACallback', 'providerBCallback', 'providerBNotifications',
  'providerAToken', 'providerBToken', 'listIdentities', 'unlinkIdentity',
  // orgs, members, invitations, projects
  'listOrgs', 'createOrg', 'getOrg', 'updateOrg', 'deleteOrg', 'restoreOrg', 'leaveOrg',
  'listMembers', 'updateMemberRole', 'removeMember',
  'listInvitations', 'createInvitation', 'revokeInvitation', 'resendInvitation', 'acceptInvitation',
  'listProjects', 'createProject', 'getProject', 'updateProject', 'deleteProject',
  // ops: audit, settings, releases, system
  'listAuditEvents', 'getAuditStats', 'getAuditEvent', 'listSignInMethods', 'getSystem',
  'listSettings', 'getSetting', 'updateSetting', 'resetSetting', 'listSettingHistory', 'listRetentionPolicies',
  'listReleases', 'listCurrentReleases', 'listInstances',
  // ops: jobs, queues, mail
  'listJobDefinitions', 'getJobDefinition', 'updateJobDefinition', 'resetJobDefinition',
  'listJobDefinitionHistory', 'runJobNow', 'listScheduledJobs', 'getJobsOverview',
  'listJobRuns', 'getJobRun', 'cancelJobRun', 'retryJobRun',
  'listQueues', 'pauseQueue', 'resumeQueue', 'getMailConfig', 'sendTestMail',
]);
