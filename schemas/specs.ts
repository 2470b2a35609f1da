import { z } from 'zod';
import { SpecValidationError, specIssues } from './spec-error';
import { GrpoSpecSchema } from './grpo-spec';
import { SmokeSpecSchema } from './smoke-spec';
import { SynthesisSpecSchema } from './synthesis-spec';

/**
 * Every pipeline kind and its spec schema. The kind is also the Temporal workflow type, so the
 * UI's Start Workflow form takes the kind as "Workflow Type" and the spec as its only input.
 */
export const SPEC_SCHEMAS = {
  Smoke: SmokeSpecSchema,
  Synthesis: SynthesisSpecSchema,
  GrpoTraining: GrpoSpecSchema,
} as const;

/** A pipeline kind. */
export type SpecKind = keyof typeof SPEC_SCHEMAS;
/** A validated spec of any kind. */
export type AnySpec = z.infer<(typeof SPEC_SCHEMAS)[SpecKind]>;

/** The kinds, for messages that list the valid values. */
export const SPEC_KINDS = Object.keys(SPEC_SCHEMAS) as SpecKind[];

function isSpecKind(kind: unknown): kind is SpecKind {
  return typeof kind === 'string' && Object.hasOwn(SPEC_SCHEMAS, kind);
}

/**
 * Validates a spec document of the kind it declares. Throws SpecValidationError naming every bad
 * field (an unknown or missing kind is itself named, with the valid kinds).
 */
export function parseSpec(document: unknown): AnySpec {
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    throw new SpecValidationError('unknown', [{ path: '', message: 'a spec must be a JSON/YAML object' }]);
  }
  const kind = (document as { kind?: unknown }).kind;
  if (!isSpecKind(kind)) {
    throw new SpecValidationError('unknown', [
      { path: 'kind', message: `must be one of ${SPEC_KINDS.join(', ')} (got ${JSON.stringify(kind)})` },
    ]);
  }
  return parseSpecOfKind(kind, document);
}

/** Validates a spec that must be of `kind`; a document without `kind` is taken to be of that kind. */
export function parseSpecOfKind<K extends SpecKind>(kind: K, document: unknown): z.infer<(typeof SPEC_SCHEMAS)[K]> {
  const input =
    typeof document === 'object' && document !== null && !Array.isArray(document) ? { kind, ...document } : document;
  const result = SPEC_SCHEMAS[kind].safeParse(input);
  if (!result.success) throw new SpecValidationError(kind, specIssues(result.error));
  return result.data as z.infer<(typeof SPEC_SCHEMAS)[K]>;
}
