/**
 * Coverage of a teacher demonstration (seed §3.3: "If the workflow leaves too many steps
 * unexecuted, the example is removed"), measured by a judge against the workflow, one verdict per
 * step (issue 18): the model that writes the rubric does not also grade the demonstrations it
 * learns from. A judge whose answer stays malformed after its repair measures nothing: the
 * demonstration is not kept, and why is recorded with its coverage.
 */
import { BOUNDS } from '../../schemas/bounds.js';
import { COVERAGE_SCHEMA_NAME, coverageSchema } from '../../schemas/coverage-judge.js';
import type { WaitingModelRole } from '../../schemas/model-endpoint.js';
import type { ModelClient } from '../llm/index.js';
import type { TemplateChoice } from '../templates/templates.js';
import { callStage } from './teacher-call.js';
import { renderTranscript } from './transcript.js';

/** One demonstration's coverage, as stored in `tasks.coverage`. */
export interface DemonstrationCoverage {
  readonly episodeId: string;
  /** Workflow steps the judge saw done, ascending. */
  readonly executedSteps: number[];
  /** executedSteps / workflow steps. */
  readonly fraction: number;
  /** fraction >= the spec's coverageThreshold: the rubric is written from it. */
  readonly kept: boolean;
  /** Why the world rejected it (never judged, never kept). */
  readonly rejected?: string;
  /** The coverage judge's answer could not be read (never kept). */
  readonly judgeFailed?: string;
}

/** What {@link judgeCoverage} needs of the task, the demonstration and the run. */
export interface CoverageInput {
  readonly taskId: string;
  readonly workflow: readonly string[];
  readonly instruction: string;
  readonly episodeId: string;
  readonly messages: Parameters<typeof renderTranscript>[0];
  readonly judge: WaitingModelRole;
  readonly threshold: number;
  readonly templates: TemplateChoice;
  readonly seed: number;
  /** Ledger role: the coverage judge's controls are billed apart (coverage-controls.ts). */
  readonly role?: 'coverage-judge' | 'coverage-judge-control';
}

/** Judges which workflow steps one demonstration carried out; cached per request like every call. */
export async function judgeCoverage(
  models: ModelClient,
  input: CoverageInput,
): Promise<DemonstrationCoverage> {
  const steps = input.workflow.length;
  const answer = await callStage(models, {
    role: input.role ?? 'coverage-judge',
    model: input.judge,
    stage: COVERAGE_SCHEMA_NAME,
    templates: input.templates,
    values: {
      instruction: input.instruction,
      workflow: input.workflow.map((step, i) => `${i}. ${step}`).join('\n'),
      transcript:
        renderTranscript(input.messages, BOUNDS.gradedTranscriptChars) || '(the assistant did nothing)',
      stepCount: String(steps),
    },
    schema: coverageSchema(steps),
    taskId: input.taskId,
    seed: input.seed,
  });
  if (!answer.ok) {
    return {
      episodeId: input.episodeId,
      executedSteps: [],
      fraction: 0,
      kept: false,
      judgeFailed: answer.detail,
    };
  }
  const executedSteps = answer.value.steps
    .filter((verdict) => verdict.executed)
    .map((verdict) => verdict.index)
    .sort((a, b) => a - b);
  const fraction = steps === 0 ? 0 : executedSteps.length / steps;
  return { episodeId: input.episodeId, executedSteps, fraction, kept: fraction >= input.threshold };
}
