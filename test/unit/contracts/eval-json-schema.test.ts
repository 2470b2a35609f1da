import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { evalJsonSchemaFiles } from '../../../schemas/eval-json-schema.js';
import {
  EVAL_ACTIVITY,
  EVAL_ERROR_TYPES,
  ListTasksInputSchema,
  SummarizeInputSchema,
  TrialInputSchema,
} from '../../../schemas/evaluation-contract.js';
import { JSON_SCHEMA_DIR } from '../../../schemas/trainer-json-schema.js';

/** The committed folder, found from this file (not the working directory vitest was started in). */
const dir = fileURLToPath(new URL(`../../../${JSON_SCHEMA_DIR}/eval`, import.meta.url));

interface ObjectSchema {
  properties: Record<string, { default?: unknown; properties?: unknown }>;
  required?: string[];
}

/** `data` with every absent property that declares a `default` set to it, as the worker fills it. */
function fillDefaults(schema: ObjectSchema, data: Record<string, unknown>): Record<string, unknown> {
  const out = { ...data };
  for (const [key, sub] of Object.entries(schema.properties)) {
    if (!(key in out) && 'default' in sub) out[key] = structuredClone(sub.default);
  }
  return out;
}

describe("the evaluation worker's contract as JSON Schema (schemas/json/eval/)", () => {
  const emitted = evalJsonSchemaFiles();
  const parsed = (name: string) => JSON.parse(emitted[`eval/${name}.json`]!) as ObjectSchema;

  it('is committed exactly as the zod schemas emit it (else: npx tsx schemas/emit-json-schema.ts)', () => {
    const committed = Object.fromEntries(
      readdirSync(dir).map((name) => [`eval/${name}`, readFileSync(path.join(dir, name), 'utf8')]),
    );
    expect(Object.keys(committed).sort()).toEqual(Object.keys(emitted).sort());
    for (const [name, text] of Object.entries(emitted)) {
      expect(committed[name], `${JSON_SCHEMA_DIR}/${name} is stale`).toBe(text);
    }
  });

  it('indexes every activity of the contract with its files', () => {
    const index = JSON.parse(emitted['eval/activities.json']!) as {
      activities: Record<string, { input: string; output?: string }>;
    };
    expect(Object.keys(index.activities).sort()).toEqual(Object.values(EVAL_ACTIVITY).sort());
    for (const files of Object.values(index.activities)) {
      expect(emitted[`eval/${files.input}`]).toBeDefined();
      if (files.output) expect(emitted[`eval/${files.output}`]).toBeDefined();
    }
    expect(JSON.parse(emitted['eval/error-types.json']!).enum).toEqual([...EVAL_ERROR_TYPES]);
  });

  it("only adds the worker's defaults: the same fields, and what it fills in is valid for zod", () => {
    const minimal: Record<string, [z.ZodObject, Record<string, unknown>]> = {
      'trial-input': [
        TrialInputSchema,
        {
          evaluationId: 'e',
          benchmark: 'tau2',
          group: 'airline',
          taskId: '0',
          trial: 0,
          policy: { baseUrl: 'http://127.0.0.1:1/v1', model: 'm' },
        },
      ],
      'list-tasks-input': [ListTasksInputSchema, { benchmark: 'bfcl', group: 'multi_turn_base' }],
      'summarize-input': [SummarizeInputSchema, { evaluationId: 'e' }],
    };
    for (const [name, [schema, input]] of Object.entries(minimal)) {
      const json = parsed(name);
      expect(Object.keys(json.properties).sort(), name).toEqual(Object.keys(schema.shape).sort());
      expect([...(json.required ?? [])].sort(), name).toEqual(Object.keys(input).sort());
      expect(schema.safeParse(fillDefaults(json, input)).error, name).toBeUndefined();
    }
    const trial = parsed('trial-input');
    expect(trial.properties['split']!.default).toBe('base');
    expect(trial.properties['sampling']!.default).toEqual({ temperature: 0 });
  });

  it('names the endpoint key variable as the spec does', () => {
    const trial = parsed('trial-input') as unknown as {
      properties: { policy: { properties: { apiKeyEnv: { pattern: string } } } };
    };
    expect(trial.properties.policy.properties.apiKeyEnv.pattern).toBe('^[A-Z_][A-Z0-9_]*$');
    const bad = TrialInputSchema.shape.policy.safeParse({ baseUrl: 'u', model: 'm', apiKeyEnv: 'key' });
    expect(bad.success).toBe(false);
  });
});
