import { z } from 'zod';
import { boundedText, boundIssues, SpecValidationError, specIssues, type SpecIssue } from './spec-error.js';
import { EvaluationSpecSchema } from './evaluation-spec.js';
import { GrpoSpecSchema } from './grpo-spec.js';
import { JudgeAuditSpecSchema } from './judge-audit-spec.js';
import { applyPreset, PAPER_PRESETS } from './presets.js';
import { ScalingStudySpecSchema } from './scaling-study-spec.js';
import { SftSpecSchema } from './sft-spec.js';
import { SmokeSpecSchema } from './smoke-spec.js';
import { SynthesisSpecSchema } from './synthesis-spec.js';

/**
 * Every pipeline kind and its spec schema. The kind is also the Temporal workflow type, so the
 * UI's Start Workflow form takes the kind as "Workflow Type" and the spec as its only input.
 */
export const SPEC_SCHEMAS = {
  Smoke: SmokeSpecSchema,
  Synthesis: SynthesisSpecSchema,
  GrpoTraining: GrpoSpecSchema,
  ScalingStudy: ScalingStudySpecSchema,
  Evaluation: EvaluationSpecSchema,
  JudgeAudit: JudgeAuditSpecSchema,
  SftTraining: SftSpecSchema,
} as const;

/** A pipeline kind. */
export type SpecKind = keyof typeof SPEC_SCHEMAS;
/** A validated spec of kind `K`. */
export type SpecOfKind<K extends SpecKind> = z.infer<(typeof SPEC_SCHEMAS)[K]>;
/** A validated spec of any kind. */
export type AnySpec = z.infer<(typeof SPEC_SCHEMAS)[SpecKind]>;
/**
 * A spec document of kind `K` as a user writes it: defaults may be left out (zod's input type).
 * `kind` may be left out too where the kind is known from elsewhere (parseSpecOfKind).
 */
export type SpecInputOfKind<K extends SpecKind> = z.input<(typeof SPEC_SCHEMAS)[K]>;
/** A spec document of any kind, as a user writes it; `kind` says which. */
export type SpecInput = { [K in SpecKind]: SpecInputOfKind<K> & { readonly kind: K } }[SpecKind];

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
      {
        path: 'kind',
        message: `must be one of ${SPEC_KINDS.join(', ')} (got ${boundedText(String(JSON.stringify(kind)), 80)})`,
      },
    ]);
  }
  return parseSpecOfKind(kind, document);
}

/**
 * Validates a spec that must be of `kind`; a document without `kind` is taken to be of that kind.
 * A `preset` it names is resolved first (schemas/presets.ts): its values under the document's.
 */
export function parseSpecOfKind<K extends SpecKind>(
  kind: K,
  document: unknown,
): z.infer<(typeof SPEC_SCHEMAS)[K]> {
  const input =
    typeof document === 'object' && document !== null && !Array.isArray(document)
      ? applyPreset(presetsOf(kind), { kind, ...document })
      : document;
  const result = SPEC_SCHEMAS[kind].safeParse(input);
  const unstorable = unstorableIssues(input);
  if (!result.success || unstorable.length) {
    throw new SpecValidationError(
      kind,
      boundIssues([...(result.success ? [] : specIssues(result.error)), ...unstorable]),
    );
  }
  return result.data as z.infer<(typeof SPEC_SCHEMAS)[K]>;
}

/** The presets of a kind (none for the kinds without one). */
function presetsOf(kind: SpecKind) {
  return Object.hasOwn(PAPER_PRESETS, kind)
    ? { paper: PAPER_PRESETS[kind as keyof typeof PAPER_PRESETS] }
    : {};
}

/** Nesting walked by {@link unstorableIssues}: every spec field is shallower; deeper values are unknown keys. */
const MAX_WALK_DEPTH = 16;

/**
 * Strings (values or keys) that PostgreSQL cannot store: NUL, which no text or jsonb column holds,
 * and unpaired UTF-16 surrogates, which jsonb refuses. A spec is stored with its run, so such a
 * spec would fail every attempt to record the run; it is refused here with the fields named.
 */
function unstorableIssues(document: unknown): SpecIssue[] {
  const issues: SpecIssue[] = [];
  const message = 'contains a NUL character or an unpaired UTF-16 surrogate, which cannot be stored';
  const walk = (value: unknown, at: string[]) => {
    if (typeof value === 'string') {
      if (UNSTORABLE.test(value)) issues.push({ path: at.join('.'), message });
      return;
    }
    if (typeof value !== 'object' || value === null || at.length >= MAX_WALK_DEPTH) return;
    for (const [key, child] of Object.entries(value)) {
      if (UNSTORABLE.test(key)) issues.push({ path: [...at, key].join('.'), message: `key ${message}` });
      walk(child, [...at, key]);
    }
  };
  walk(document, []);
  return issues;
}

// Kept here (not imported from activities/store) because workflows import this module.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
