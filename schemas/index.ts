import type { SpecInputOfKind } from './specs.js';

/**
 * The public schema surface of the package (`import { ... } from 'mockworld/schemas'`): the spec
 * of each pipeline kind, the parsers that validate a spec as the workflows do at start, and the
 * status every run answers. The records and cross-process contracts in the other files of
 * schemas/ are internal: they are not part of the package's API and may change between releases.
 */
export {
  SPEC_KINDS,
  SPEC_SCHEMAS,
  parseSpec,
  parseSpecOfKind,
  type AnySpec,
  type SpecInput,
  type SpecInputOfKind,
  type SpecKind,
  type SpecOfKind,
} from './specs.js';
export { SpecValidationError, type SpecIssue } from './spec-error.js';
export { SmokeSpecSchema, type SmokeSpec } from './smoke-spec.js';
export type SmokeSpecInput = SpecInputOfKind<'Smoke'>;
export type SynthesisSpecInput = SpecInputOfKind<'Synthesis'>;
export type GrpoSpecInput = SpecInputOfKind<'GrpoTraining'>;
export type ScalingStudySpecInput = SpecInputOfKind<'ScalingStudy'>;
export type EvaluationSpecInput = SpecInputOfKind<'Evaluation'>;
export type JudgeAuditSpecInput = SpecInputOfKind<'JudgeAudit'>;
export type SftSpecInput = SpecInputOfKind<'SftTraining'>;
export { SynthesisSpecSchema, type SynthesisSpec } from './synthesis-spec.js';
export { GrpoSpecSchema, type GrpoSpec } from './grpo-spec.js';
export { ScalingStudySpecSchema, type ScalingStudySpec } from './scaling-study-spec.js';
export { SftSpecSchema, type SftSpec } from './sft-spec.js';
export { JudgeAuditSpecSchema, type JudgeAuditSpec } from './judge-audit-spec.js';
export { EvaluationSpecSchema, type EvaluationSpec } from './evaluation-spec.js';
export { RunStateSchema, RunStatusSchema, type RunState, type RunStatus } from './run-status.js';
