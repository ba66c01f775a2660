// The contract's proof objects (StepUpProof, spec 2.5's passkey) as the domain takes them.
import type { components } from '../../codegen/api-types';
import type { StepUpProof } from '../../src/accounts/service';

type ApiProof = components['schemas']['StepUpProof'];
type ApiPasskeyProof = components['schemas']['PasskeyProof'];

export const toPasskeyProof = (p: ApiPasskeyProof) => ({ ceremonyToken: p.ceremony_token, credential: p.credential as Record<string, unknown> });

export function toStepUpProof(body: ApiProof): StepUpProof {
  if (body.passkey) return { passkey: toPasskeyProof(body.passkey) };
  if (body.code !== undefined) return { code: body.code };
  return { password: body.password };
}
