// Personal data in job payloads: a payload that concerns an address keeps it under `to` (mail,
// password-reset requests). Erasing an address cancels the waiting runs addressed to it and
// removes it, with the rest of the payload, from every run, and from the errors its attempts
// recorded (a mail server's refusal names the recipient). Any case matches (indexed:
// job_runs_payload_to_lower_idx).
import type { Db } from '../platform/database';

export const ERASED = '[erased]';

/** A regular expression matching `text` literally. */
const literalPattern = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export async function eraseAddressInPayloads(db: Db, email: string, now: Date): Promise<number> {
  return db('job_runs')
    .whereRaw("lower(payload->>'to') = lower(?)", [email])
    .update({
      payload: db.raw("jsonb_build_object('to', ?::text)", [ERASED]),
      errors: db.raw("regexp_replace(errors::text, ?, ?, 'gi')::jsonb", [literalPattern(email), ERASED]),
      state: db.raw("case when state in ('scheduled', 'available', 'retryable') then 'cancelled' else state end"),
      finalized_at: db.raw("case when state in ('scheduled', 'available', 'retryable') then ?::timestamptz else finalized_at end", [now]),
    });
}
