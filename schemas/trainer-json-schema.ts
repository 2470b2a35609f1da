/**
 * The trainer contract as JSON Schema files (draft 2020-12), for the Python trainer, which does not
 * read zod. Pure: returns the files' text; emit-json-schema.ts writes them under schemas/json/, and
 * a unit test compares this with the committed files, so they are never stale.
 *
 * Inputs are emitted as the trainer receives them (`io: 'input'`: a field with a default may be left
 * out, and its `default` is what the trainer fills in); outputs as they leave it (`io: 'output'`).
 */
import { z } from 'zod';
import { GrpoBatchRecordSchema, SftBatchRecordSchema } from './trainer-batch-record.js';
import { TRAINER_ACTIVITIES, TrainerErrorTypeSchema } from './trainer-contract.js';
import { TrainerModelSpecSchema } from './trainer-model.js';
import {
  TrainerBatchRefSchema,
  TrainerStepConfigSchema,
  TrainerStepHeartbeatSchema,
} from './trainer-step.js';

/** Folder of the emitted files, relative to the repository root. */
export const JSON_SCHEMA_DIR = 'schemas/json';

const GENERATED =
  'Generated from schemas/trainer-*.ts by `npx tsx schemas/emit-json-schema.ts`; do not edit.';

/** File stem of each activity's input and output schema (grpoStep and sftStep share theirs). */
const ACTIVITY_FILES: Record<keyof typeof TRAINER_ACTIVITIES, { input: string; output: string }> = {
  'trainer.grpoStep': { input: 'step-input', output: 'step-result' },
  'trainer.sftStep': { input: 'step-input', output: 'step-result' },
  'trainer.saveCheckpoint': { input: 'save-checkpoint-input', output: 'save-checkpoint-result' },
  'trainer.registerRun': { input: 'register-run-input', output: 'policy-result' },
  'trainer.latestPolicy': { input: 'latest-policy-input', output: 'policy-result' },
  'trainer.trackIteration': { input: 'track-iteration-input', output: 'track-iteration-result' },
};

/** Parts the trainer validates on their own: a model spec (`--base`, run.json), a config, a batch. */
const PART_FILES: Record<string, { schema: z.ZodType; io: 'input' | 'output' }> = {
  'model-spec': { schema: TrainerModelSpecSchema, io: 'input' },
  'step-config': { schema: TrainerStepConfigSchema, io: 'input' },
  'batch-ref': { schema: TrainerBatchRefSchema, io: 'input' },
  'grpo-batch-record': { schema: GrpoBatchRecordSchema, io: 'input' },
  'sft-batch-record': { schema: SftBatchRecordSchema, io: 'input' },
  'step-heartbeat': { schema: TrainerStepHeartbeatSchema, io: 'output' },
  'error-types': { schema: TrainerErrorTypeSchema, io: 'output' },
};

function render(title: string, schema: z.ZodType, io: 'input' | 'output'): string {
  const json = z.toJSONSchema(schema, { io, target: 'draft-2020-12' });
  return `${JSON.stringify({ $comment: GENERATED, title, ...json }, null, 2)}\n`;
}

/** Path (under {@link JSON_SCHEMA_DIR}) → text of every emitted file, each titled by its name. */
export function trainerJsonSchemaFiles(): Record<string, string> {
  const files: Record<string, string> = {};
  const index: Record<string, { input: string; output: string }> = {};
  for (const [name, stems] of Object.entries(ACTIVITY_FILES)) {
    const activity = TRAINER_ACTIVITIES[name as keyof typeof TRAINER_ACTIVITIES];
    files[`trainer/${stems.input}.json`] = render(stems.input, activity.input, 'input');
    files[`trainer/${stems.output}.json`] = render(stems.output, activity.output, 'output');
    index[name] = { input: `${stems.input}.json`, output: `${stems.output}.json` };
  }
  for (const [stem, { schema, io }] of Object.entries(PART_FILES)) {
    files[`trainer/${stem}.json`] = render(stem, schema, io);
  }
  // The activity names and which files describe each: the trainer checks it serves exactly these.
  files['trainer/activities.json'] =
    `${JSON.stringify({ $comment: GENERATED, activities: index }, null, 2)}\n`;
  return files;
}
