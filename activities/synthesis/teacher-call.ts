import type { z } from 'zod';
import { batchWindowOf, type WaitingModelRole } from '../../schemas/model-endpoint.js';
import { resolveEndpoint } from '../llm/default-endpoint.js';
import { StructuredOutputRejectedError, type ModelClient } from '../llm/index.js';
import {
  loadTemplate,
  renderTemplate,
  type TemplateChoice,
  type TemplateStage,
} from '../templates/templates.js';

const COVERAGE_JUDGE_SYSTEM =
  'You are a strict, impartial grader of AI assistant transcripts. You check each workflow step against ' +
  'what the transcript shows and answer with JSON only.';

/**
 * The system line of each synthesis role; the stage template is the user message. The coverage
 * judge's controls are billed apart but must read exactly like its real calls.
 */
const SYSTEM_PROMPTS = {
  teacher:
    'You are an expert designer of realistic, verifiable tool-use tasks for training AI agents. Answer with JSON only.',
  'rubric-extractor':
    'You are a careful grader who writes objective rubrics from workflows and transcripts. Answer with JSON only.',
  'coverage-judge': COVERAGE_JUDGE_SYSTEM,
  'coverage-judge-control': COVERAGE_JUDGE_SYSTEM,
} as const;

/** A structured stage call: which role, template and schema, and whose ledger pays. */
export interface StageCall<S extends z.ZodType> {
  readonly role: keyof typeof SYSTEM_PROMPTS;
  readonly model: WaitingModelRole;
  readonly stage: TemplateStage;
  readonly templates: TemplateChoice;
  readonly values: Record<string, unknown>;
  readonly schema: S;
  /** Task id: the ledger row's run id, so tokens are attributable per task. */
  readonly taskId: string;
  /** Seed for this task when the role sets none (spec seed + task index). */
  readonly seed: number;
  readonly signal?: AbortSignal;
}

/** A stage's answer, or the recorded reason the model's output was refused. */
export type StageAnswer<T> =
  | { readonly ok: true; readonly value: T; readonly templateId: string }
  | { readonly ok: false; readonly detail: string; readonly templateId: string };

/** Renders the stage template and asks for a schema-valid JSON answer (one repair, then a recorded rejection). */
export async function callStage<S extends z.ZodType>(
  models: ModelClient,
  call: StageCall<S>,
): Promise<StageAnswer<z.output<S>>> {
  const template = await loadTemplate(call.stage, call.templates);
  try {
    const result = await models.structured(
      {
        endpoint: resolveEndpoint(call.model.endpoint),
        messages: [
          { role: 'system', content: SYSTEM_PROMPTS[call.role] },
          { role: 'user', content: renderTemplate(template, call.values) },
        ],
        sampling: { ...call.model.sampling, seed: call.model.sampling.seed ?? call.seed },
        runId: call.taskId,
        role: call.role,
        signal: call.signal,
        batch: batchWindowOf(call.model),
      },
      call.schema,
      call.stage,
    );
    return { ok: true, value: result.value, templateId: template.id };
  } catch (error) {
    if (error instanceof StructuredOutputRejectedError) {
      return {
        ok: false,
        detail: `${call.stage}: ${error.reason}: ${error.message}`.slice(0, 2_000),
        templateId: template.id,
      };
    }
    throw error;
  }
}
