import type { components } from '../../codegen/api-types';

export function recoveryCodeSet(set: { codes: string[]; createdAt: Date }): components['schemas']['RecoveryCodeSet'] {
  return { codes: set.codes, created_at: set.createdAt.toISOString() };
}
