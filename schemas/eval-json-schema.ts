/**
 * The evaluation worker's contract (evaluation-contract.ts) as JSON Schema files (draft 2020-12),
 * for the Python evaluation worker, which does not read zod. Pure: returns the files' text;
 * emit-json-schema.ts writes them under schemas/json/eval/, and a unit test compares this with the
 * committed files, so they are never stale.
 *
 * Inputs are emitted as the worker receives them (`io: 'input'`), with the worker's defaults: the
 * workflows always send `sampling` and `trials` and leave the tau2 settings and the bootstrap's out,
 * and the worker fills in what is left out (hand-written inputs, its tests and
 * `python -m mockworld_eval.trial` may leave out more). A field with a default may be left out, and
 * its `default` is what the worker fills in; everything else is the zod schema as it is. Outputs are
 * emitted as they leave the worker (`io: 'output'`).
 */
import { z } from 'zod';
import {
  DEFAULT_TRIAL_TIMEOUT_MINUTES,
  EVAL_ACTIVITY,
  EVAL_ERROR_TYPES,
  EvaluationMetricsSchema,
  ListTasksInputSchema,
  SummarizeInputSchema,
  TrialInputSchema,
  TrialSummarySchema,
} from './evaluation-contract.js';

const GENERATED =
  'Generated from schemas/evaluation-contract.ts by `npx tsx schemas/emit-json-schema.ts`; do not edit.';

/** Sampling as the worker takes it: temperature 0 when left out. */
function workerSampling<S extends typeof TrialInputSchema.shape.sampling>(sampling: S) {
  return sampling.extend({ temperature: sampling.shape.temperature.default(0) }).default({ temperature: 0 });
}

const trial = TrialInputSchema.shape;
const list = ListTasksInputSchema.shape;
const summarize = SummarizeInputSchema.shape;

/** The worker's inputs: the zod schemas with the defaults the worker fills in. */
const WorkerTrialInputSchema = TrialInputSchema.extend({
  trials: trial.trials.default(1),
  sampling: workerSampling(trial.sampling),
  userSampling: workerSampling(trial.userSampling.unwrap()),
  split: trial.split.unwrap().default('base'),
  maxSteps: trial.maxSteps.unwrap().default(200),
  maxErrors: trial.maxErrors.unwrap().default(10),
  seed: trial.seed.unwrap().default(300),
  wallSeconds: trial.wallSeconds.unwrap().default(DEFAULT_TRIAL_TIMEOUT_MINUTES * 60),
});
const WorkerListTasksInputSchema = ListTasksInputSchema.extend({
  split: list.split.unwrap().default('base'),
});
const WorkerSummarizeInputSchema = SummarizeInputSchema.extend({
  bootstrapSamples: summarize.bootstrapSamples.unwrap().default(2000),
  confidence: summarize.confidence.unwrap().default(0.95),
  seed: summarize.seed.unwrap().default(0),
});

type ActivityName = (typeof EVAL_ACTIVITY)[keyof typeof EVAL_ACTIVITY];

/**
 * Each activity's input and output file, with its schema (eval.listTasks's result is a TypeScript
 * interface, not a zod schema, so it has no file).
 */
const ACTIVITY_FILES: Record<ActivityName, { input: [string, z.ZodType]; output?: [string, z.ZodType] }> = {
  'eval.runTrial': {
    input: ['trial-input', WorkerTrialInputSchema],
    output: ['trial-summary', TrialSummarySchema],
  },
  'eval.listTasks': { input: ['list-tasks-input', WorkerListTasksInputSchema] },
  'eval.summarize': {
    input: ['summarize-input', WorkerSummarizeInputSchema],
    output: ['evaluation-metrics', EvaluationMetricsSchema],
  },
};

function render(title: string, schema: z.ZodType, io: 'input' | 'output'): string {
  const json = z.toJSONSchema(schema, { io, target: 'draft-2020-12' });
  return `${JSON.stringify({ $comment: GENERATED, title, ...json }, null, 2)}\n`;
}

/** Path (under schemas/json/) → text of every emitted file of the evaluation worker's contract. */
export function evalJsonSchemaFiles(): Record<string, string> {
  const files: Record<string, string> = {};
  const index: Record<string, { input: string; output?: string }> = {};
  for (const [name, { input, output }] of Object.entries(ACTIVITY_FILES)) {
    files[`eval/${input[0]}.json`] = render(input[0], input[1], 'input');
    if (output) files[`eval/${output[0]}.json`] = render(output[0], output[1], 'output');
    index[name] = output
      ? { input: `${input[0]}.json`, output: `${output[0]}.json` }
      : { input: `${input[0]}.json` };
  }
  files['eval/error-types.json'] = render('error-types', z.enum(EVAL_ERROR_TYPES), 'output');
  // The activity names and which files describe each: the worker checks it serves exactly these.
  files['eval/activities.json'] = `${JSON.stringify({ $comment: GENERATED, activities: index }, null, 2)}\n`;
  return files;
}
