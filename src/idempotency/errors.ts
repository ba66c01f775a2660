// The idempotency domain's error codes, declared once (a test checks them against openapi.yaml).
import { defineErrors } from '../errors';

export const idempotencyErrors = defineErrors('idempotency', {
  inUse: {
    code: 'idempotency_key_in_use',
    status: 409,
    detail: 'Another request with this Idempotency-Key is still being processed. Retry after Retry-After seconds to get its answer.',
  },
  reused: {
    code: 'idempotency_key_reused',
    status: 422,
    detail: 'This Idempotency-Key was used with a different request. Use a new key for a new request.',
  },
});
