// The organisations domain's error codes, declared once (a test checks them against openapi.yaml).
import { defineErrors } from '../errors';

export const orgErrors = defineErrors('orgs', {
  emailNotVerified: { code: 'email_not_verified', status: 403, detail: 'Verify your email address first.' },
  invitationEmailMismatch: {
    code: 'invitation_email_mismatch',
    status: 403,
    detail: 'This invitation was sent to a different email address. Sign in with that address to accept it.',
  },
  invitationNotFound: { code: 'invitation_not_found', status: 404, detail: 'This invitation is invalid. Ask for a new one.' },
  slugTaken: { code: 'slug_taken', status: 409, detail: 'This slug is already taken.' },
  notDeleted: { code: 'not_deleted', status: 409, detail: 'The organisation is not deleted.' },
  lastOwner: { code: 'last_owner', status: 409, detail: 'An organisation must keep at least one owner.' },
  alreadyMember: { code: 'already_member', status: 409, detail: 'This address belongs to a member of the organisation already.' },
  invitationPending: { code: 'invitation_pending', status: 409, detail: 'This address already has an open invitation. Resend it instead.' },
  projectNameTaken: { code: 'project_name_taken', status: 409, detail: 'Another project of the organisation already has this name.' },
  invitationExpired: { code: 'invitation_expired', status: 410, detail: 'This invitation has expired. Ask for a new one.' },
  invitationRevoked: { code: 'invitation_revoked', status: 410, detail: 'This invitation was withdrawn. Ask for a new one.' },
  invitationUsed: { code: 'invitation_used', status: 410, detail: 'This invitation was already accepted.' },
});
