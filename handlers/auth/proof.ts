// The contract's proof objects (StepUpProof, spec 2.5's passkey) as the domain takes them.
import type { components } from '../../codegen/api-types';
import type { StepUpProof } from '../../src/signin/step-up';

type ApiProof = components['schemas']['StepUpProof'];
type ApiPasskeyProof = components['schemas']['PasskeyProof'];

export const toPasskeyProof = (p: ApiPasskeyProof) => ({ ceremonyToken: p.ceremony_token, credential: p.credential as Record<string, unknown> });

/** One of the body's shapes (its oneOf), told apart by the property it has. */
export function toStepUpProof(body: ApiProof): StepUpProof {
  if ('passkey' in body) return { passkey: toPasskeyProof(body.passkey) };
  if ('code' in body) return { code: body.code };
  return { password: body.password };
}
