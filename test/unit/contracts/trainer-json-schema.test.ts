import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { GrpoBatchRecordSchema } from '../../../schemas/trainer-batch-record.js';
import { TRAINER_ACTIVITIES } from '../../../schemas/trainer-contract.js';
import { JSON_SCHEMA_DIR, trainerJsonSchemaFiles } from '../../../schemas/trainer-json-schema.js';
import { TrainerModelSpecSchema } from '../../../schemas/trainer-model.js';
import { TrainerStepInputSchema } from '../../../schemas/trainer-step.js';

/** The committed folder, found from this file (not the working directory vitest was started in). */
const dir = fileURLToPath(new URL(`../../../${JSON_SCHEMA_DIR}`, import.meta.url));

describe('the trainer contract as JSON Schema (schemas/json/)', () => {
  const emitted = trainerJsonSchemaFiles();

  it('is committed exactly as the zod schemas emit it (else: npx tsx schemas/emit-json-schema.ts)', () => {
    const committed = Object.fromEntries(
      readdirSync(path.join(dir, 'trainer')).map((name) => [
        `trainer/${name}`,
        readFileSync(path.join(dir, 'trainer', name), 'utf8'),
      ]),
    );
    expect(Object.keys(committed).sort()).toEqual(Object.keys(emitted).sort());
    for (const [name, text] of Object.entries(emitted)) {
      expect(committed[name], `${JSON_SCHEMA_DIR}/${name} is stale`).toBe(text);
    }
  });

  it('indexes every activity of the contract with its input and output file', () => {
    const index = JSON.parse(emitted['trainer/activities.json']!) as {
      activities: Record<string, { input: string; output: string }>;
    };
    expect(Object.keys(index.activities)).toEqual(Object.keys(TRAINER_ACTIVITIES));
    for (const files of Object.values(index.activities)) {
      expect(emitted[`trainer/${files.input}`]).toBeDefined();
      expect(emitted[`trainer/${files.output}`]).toBeDefined();
    }
  });

  it('states the bounds the trainer enforces: clip strictly in (0, 1), no float16, the three model kinds', () => {
    const config = JSON.parse(emitted['trainer/step-config.json']!) as {
      properties: Record<string, Record<string, unknown>>;
    };
    for (const clip of ['eps_low', 'eps_high']) {
      expect(config.properties[clip]).toMatchObject({ exclusiveMinimum: 0, exclusiveMaximum: 1 });
    }
    const model = JSON.parse(emitted['trainer/model-spec.json']!) as {
      oneOf: Array<{ properties: Record<string, { const?: string; enum?: string[] }> }>;
    };
    expect(model.oneOf.map((branch) => branch.properties['kind']!.const)).toEqual([
      'tiny',
      'pretrained',
      'gguf',
    ]);
    expect(model.oneOf[1]!.properties['dtype']!.enum).toEqual(['float32', 'bfloat16']);
  });

  it('refuses in zod what the JSON Schema cannot say, the same way', () => {
    const heads = TrainerModelSpecSchema.safeParse({ kind: 'tiny', hidden_size: 30, num_heads: 4 });
    expect(heads.success).toBe(false);
    expect(heads.error!.issues[0]!.path).toEqual(['num_heads']);
    const record = GrpoBatchRecordSchema.safeParse({
      group_id: 't',
      reward: 1,
      messages: [{ role: 'user' }],
    });
    expect(record.error!.issues[0]!.message).toMatch(/assistant turn/);
    expect(JSON.parse(emitted['trainer/grpo-batch-record.json']!).properties.messages.contains).toEqual({
      type: 'object',
      properties: { role: { const: 'assistant' } },
      required: ['role'],
    });
    const step = TrainerStepInputSchema.safeParse({
      run_id: 'r',
      step: 1,
      batch_ref: { kind: 'postgres' },
      config: { eps_high: 1 },
    });
    expect(step.error!.issues.map((i) => i.path.join('.'))).toEqual(['config.eps_high']);
  });
});
