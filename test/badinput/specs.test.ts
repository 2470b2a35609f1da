import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpecValidationError, type SpecIssue } from '../../schemas/spec-error.js';
import { parseSpec, SPEC_KINDS, SPEC_SCHEMAS, type SpecKind } from '../../schemas/specs.js';
import { readSpecFile } from '../../cli/spec-file.js';

/** The SpecValidationError a document gets (the test fails if it validates). */
function rejection(document: unknown): SpecValidationError {
  try {
    parseSpec(document);
  } catch (error) {
    if (error instanceof SpecValidationError) return error;
    throw new Error(`expected a SpecValidationError, got ${String(error)}`);
  }
  throw new Error(`expected the spec to be refused: ${JSON.stringify(document).slice(0, 200)}`);
}

async function fileRejection(file: string): Promise<SpecValidationError> {
  const error = await readSpecFile(file).then(
    () => new Error(`expected ${file} to be refused`),
    (e: unknown) => e,
  );
  if (!(error instanceof SpecValidationError)) throw error;
  return error;
}

/** Whether an issue is about `field` (the field itself or anything inside it). */
const about = (issue: SpecIssue, field: string) => issue.path === field || issue.path.startsWith(`${field}.`);

/** Asserts every field is named by an issue, in the message too (what the user reads). */
function expectNamed(error: SpecValidationError, fields: readonly string[]) {
  for (const field of fields) {
    expect(
      error.issues.some((i) => about(i, field)),
      `${field} not named in:\n${error.message}`,
    ).toBe(true);
    expect(error.message).toContain(`- ${field}`);
  }
}

/** The top-level fields of a kind's schema (every kind is a zod object, refinements included). */
function shapeOf(kind: SpecKind): Record<string, z.ZodType> {
  const schema = SPEC_SCHEMAS[kind] as unknown as { shape?: Record<string, z.ZodType> };
  if (!schema.shape) throw new Error(`${kind} spec schema is not an object schema`);
  return schema.shape;
}

/** A valid spec of each kind, so one bad field at a time is the only problem. */
const VALID: Record<string, Record<string, unknown>> = {
  Smoke: { kind: 'Smoke' },
  Synthesis: { kind: 'Synthesis', personas: { path: 'personas.jsonl' }, tasks: 2 },
  GrpoTraining: {
    kind: 'GrpoTraining',
    dataset: { synthesisRunId: 'synthesis-x' },
    policy: { base: { kind: 'tiny' }, endpoint: { baseUrl: 'http://127.0.0.1:9/v1', model: 'policy' } },
  },
  SftTraining: {
    kind: 'SftTraining',
    dataset: { synthesisRunId: 'synthesis-x', examples: 128 },
    policy: { base: { kind: 'tiny' } },
  },
};

describe('hostile spec documents, every kind, through parseSpec', () => {
  it('has a valid example of each hand-checked kind (the refusals below are not vacuous)', () => {
    for (const [kind, spec] of Object.entries(VALID)) {
      expect(SPEC_KINDS).toContain(kind);
      expect(parseSpec(spec).kind).toBe(kind);
    }
  });

  it.each(SPEC_KINDS)('%s: every field given a value of the wrong type is named, in one error', (kind) => {
    const shape = shapeOf(kind);
    const wrong = { $wrong: [1, 2, 3] };
    const fields = Object.keys(shape).filter((f) => f !== 'kind' && !shape[f]!.safeParse(wrong).success);
    expect(fields.length).toBeGreaterThan(2);
    const document = Object.fromEntries([['kind', kind], ...fields.map((f) => [f, wrong])]);
    const error = rejection(document);
    expect(error.kind).toBe(kind);
    expectNamed(error, fields);
  });

  it.each(SPEC_KINDS)('%s: every required field that is missing is named', (kind) => {
    const shape = shapeOf(kind);
    const required = Object.keys(shape).filter(
      (f) => f !== 'kind' && !shape[f]!.safeParse(undefined).success,
    );
    if (required.length === 0)
      expect(parseSpec({ kind }).kind).toBe(kind); // every field has a default
    else expectNamed(rejection({ kind }), required);
  });

  it.each(SPEC_KINDS)(
    '%s: prototype-pollution keys are refused as unknown keys and pollute nothing',
    (kind) => {
      const text = `{"kind": ${JSON.stringify(kind)}, "__proto__": {"polluted": true, "steps": 999},
        "constructor": {"prototype": {"polluted": true}}, "prototype": {"polluted": true}, "bogusField": 1}`;
      const error = rejection(JSON.parse(text));
      for (const key of ['__proto__', 'constructor', 'prototype', 'bogusField'])
        expect(error.message).toContain(key);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(Object.prototype).not.toHaveProperty('polluted');
    },
  );

  it.each(SPEC_KINDS)('%s: NUL characters and unpaired surrogates in values and keys are named', (kind) => {
    const shape = shapeOf(kind);
    const base = VALID[kind] ?? { kind };
    const document: Record<string, unknown> = { ...base, 'bad\u0000key': 1 };
    if ('name' in shape) document.name = 'nul\u0000name';
    const error = rejection(document);
    expect(error.message).toMatch(/NUL character or an unpaired UTF-16 surrogate/);
    if ('name' in shape) expectNamed(error, ['name']);
    expect(error.issues.some((i) => i.path === 'bad\u0000key')).toBe(true);
  });

  it('names NUL and lone surrogates deep inside a spec, where PostgreSQL would refuse the run row', () => {
    const error = rejection({
      kind: 'Smoke',
      prompt: 'say hi\u0000',
      model: { endpoint: { baseUrl: 'http://127.0.0.1:9/v1', model: 'm\ud800' } },
    });
    expectNamed(error, ['prompt', 'model.endpoint.model']);
    const lowSurrogate = rejection({ ...VALID.Synthesis, personas: { path: 'p\udc00.jsonl' } });
    expectNamed(lowSurrogate, ['personas.path']);
    // A well-formed pair (an emoji), RTL overrides and zero-width characters are fine.
    expect(parseSpec({ kind: 'Smoke', prompt: 'hi 🙂 \u202eevil\u202c \u200b\u200d\ufeff' }).kind).toBe(
      'Smoke',
    );
  });

  it('names every absurd number of a Smoke spec', () => {
    const error = rejection({
      kind: 'Smoke',
      steps: 1e12,
      model: { sampling: { temperature: -1, topP: 0, maxTokens: 1e12, seed: 0.5 } },
    });
    expectNamed(error, [
      'steps',
      'model.sampling.temperature',
      'model.sampling.topP',
      'model.sampling.maxTokens',
      'model.sampling.seed',
    ]);
    for (const steps of [-1, 0, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '3', null, true, [3]]) {
      expectNamed(rejection({ kind: 'Smoke', steps }), ['steps']);
    }
  });

  it('names every absurd number of a Synthesis spec (1e12 tasks, negative counts, fractions)', () => {
    const role = {
      sampling: { maxTokens: -5 },
      endpoint: { baseUrl: 'http://h/v1', model: 'm', maxConcurrency: 1e9 },
    };
    const error = rejection({
      ...VALID.Synthesis,
      tasks: 1e12,
      personas: { path: 'p.jsonl', offset: -1 },
      demonstrationsPerTask: -4,
      maxTurns: 1e9,
      coverageThreshold: 2,
      concurrency: 0,
      tasksPerWorkflowRun: 1.5,
      seed: -1,
      refine: { distractors: 99 },
      models: { teacher: role, rubricExtractor: { sampling: { temperature: 3 } } },
    });
    expectNamed(error, [
      'tasks',
      'personas.offset',
      'demonstrationsPerTask',
      'maxTurns',
      'coverageThreshold',
      'concurrency',
      'tasksPerWorkflowRun',
      'seed',
      'refine.distractors',
      'models.teacher.sampling.maxTokens',
      'models.teacher.endpoint.maxConcurrency',
      'models.rubricExtractor.sampling.temperature',
    ]);
  });

  it("names a Synthesis spec's demonstration tool choices: an unknown one, and more of them than maxTurns", () => {
    expectNamed(
      rejection({ ...VALID.Synthesis, maxTurns: 2, demonstrationToolChoice: ['ask_user', 'tool'] }),
      ['demonstrationToolChoice.1'],
    );
    const error = rejection({
      ...VALID.Synthesis,
      maxTurns: 2,
      demonstrationToolChoice: ['ask_user', 'task_tool', 'answer'],
    });
    expectNamed(error, ['demonstrationToolChoice']);
    expect(error.message).toContain('more than maxTurns (2)');
  });

  it('names every absurd number of a GrpoTraining spec, cross-field checks included', () => {
    const error = rejection({
      ...VALID.GrpoTraining,
      dataset: { heldOutTasks: -3 }, // synthesisRunId missing too
      globalBatch: 1e12,
      rolloutsPerTask: 1,
      learningRate: -1,
      clipLow: 2,
      epochs: 1e6,
      evaluateEvery: -1,
    });
    expectNamed(error, [
      'dataset.synthesisRunId',
      'dataset.heldOutTasks',
      'globalBatch',
      'rolloutsPerTask',
      'learningRate',
      'clipLow',
      'epochs',
      'evaluateEvery',
    ]);
    // A batch that does not divide is named alongside an unrelated missing field, not one fix later.
    const mixed = rejection({ ...VALID.GrpoTraining, policy: undefined, globalBatch: 10, miniBatch: 3 });
    expectNamed(mixed, ['policy', 'miniBatch']);
    // Penalties are fine for the judge and simulators, never for the policy being trained.
    const penalties = rejection({
      ...VALID.GrpoTraining,
      policy: { ...(VALID.GrpoTraining!.policy as object), sampling: { frequencyPenalty: 0.5 } },
      judge: { sampling: { presencePenalty: 3 } },
    });
    expectNamed(penalties, ['policy.sampling.frequencyPenalty', 'judge.sampling.presencePenalty']);
    expect(penalties.message).toMatch(/frequencyPenalty: not allowed here/);
    const zero = { ...(VALID.GrpoTraining!.policy as object), sampling: { frequencyPenalty: 0 } };
    expect(parseSpec({ ...VALID.GrpoTraining, policy: zero }).kind).toBe('GrpoTraining');
    expect(parseSpec({ ...VALID.GrpoTraining, judge: { sampling: { frequencyPenalty: 0.5 } } }).kind).toBe(
      'GrpoTraining',
    );
  });

  it('names every absurd number of an SftTraining spec, the dataset and the student included', () => {
    const error = rejection({
      ...VALID.SftTraining,
      dataset: { heldOutTasks: -1, examples: 0 }, // synthesisRunId missing too
      policy: { base: { kind: 'pretrained', path: '/models/qwen3', dtype: 'float16' } },
      epochs: 0,
      globalBatch: 1e9,
      learningRate: 0,
      warmupRatio: 0.9,
      maxSeqLen: 8,
      seed: -1,
      gpuTaskQueue: '',
    });
    expectNamed(error, [
      'dataset.synthesisRunId',
      'dataset.heldOutTasks',
      'dataset.examples',
      'policy.base.dtype',
      'epochs',
      'globalBatch',
      'learningRate',
      'warmupRatio',
      'maxSeqLen',
      'seed',
      'gpuTaskQueue',
    ]);
    // A GRPO run's fields are not an SFT run's: named as unknown, not ignored.
    expect(rejection({ ...VALID.SftTraining, rolloutsPerTask: 16 }).message).toMatch(
      /Unrecognized key: "rolloutsPerTask"/,
    );
    // Without `examples` it trains on every kept demonstration; the study's defaults fill the rest.
    const all = parseSpec({ ...VALID.SftTraining, dataset: { synthesisRunId: 'synthesis-x' } });
    expect(all).toMatchObject({ kind: 'SftTraining', epochs: 8, globalBatch: 32, maxSeqLen: 4096 });
    expect((all as { dataset: { examples?: number } }).dataset.examples).toBeUndefined();
  });

  it('refuses at start what the trainer would refuse at its first step: float16, clip bounds, model kinds', () => {
    const endpoint = { baseUrl: 'http://127.0.0.1:9/v1', model: 'policy' };
    const pretrained = { kind: 'pretrained', path: '/models/qwen3', dtype: 'float16' };
    const grpo = rejection({ ...VALID.GrpoTraining, policy: { base: pretrained, endpoint }, clipHigh: 1 });
    expectNamed(grpo, ['policy.base.dtype', 'clipHigh']);
    expect(grpo.message).toMatch(/policy\.base\.dtype: .*float16 is not trainable/);
    for (const clip of [0, 1, 1.5, -0.2]) {
      expectNamed(rejection({ ...VALID.GrpoTraining, clipHigh: clip, clipLow: clip }), [
        'clipHigh',
        'clipLow',
      ]);
    }
    expectNamed(rejection({ ...VALID.GrpoTraining, policy: { base: { kind: 'huge' }, endpoint } }), [
      'policy.base.kind',
    ]);
    // The study's student trains on the same trainer and is refused the same way.
    const study = {
      kind: 'ScalingStudy',
      questions: { seedPool: 'seed.jsonl', testSet: 'test.jsonl' },
      student: { base: pretrained, endpoint },
    };
    expectNamed(rejection(study), ['student.base.dtype']);
    expectNamed(rejection({ ...study, student: { base: { kind: 'tiny', hidden_size: 64 }, endpoint } }), [
      'student.base',
    ]);
    // What the trainer takes is still taken: bfloat16, and a schedule that decays the learning rate to 0.
    const bf16 = { ...pretrained, dtype: 'bfloat16' };
    expect(parseSpec({ ...VALID.GrpoTraining, policy: { base: bf16, endpoint }, clipHigh: 0.4 }).kind).toBe(
      'GrpoTraining',
    );
    const decayToZero = { ...study, student: { base: bf16, endpoint }, sft: { minLearningRate: 0 } };
    expect(parseSpec(decayToZero).kind).toBe('ScalingStudy');
    // Budget lists run in increasing order without repeats: a repeat or a shuffle is refused by name.
    const tiny = { ...study, student: { base: { kind: 'tiny' }, endpoint } };
    for (const budgets of [
      [1, 2, 2],
      [4, 1, 2],
    ]) {
      const refused = rejection({ ...tiny, budgets, rejectionSampling: { acceptedPerQuestion: 4 } });
      expectNamed(refused, ['budgets']);
      expect(refused.message).toContain('budgets: must be increasing, without repeats');
    }
    expectNamed(rejection({ ...tiny, questionSynthesis: { budgets: [2, 1] } }), [
      'questionSynthesis.budgets',
    ]);
    expectNamed(rejection({ ...tiny, sourceExpansion: { buckets: [8, 4] } }), ['sourceExpansion.buckets']);
  });

  it('refuses unknown kinds and non-objects, listing the valid kinds, with a bounded message', () => {
    for (const kind of ['Training', '', 42, null, '__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      const error = rejection({ kind });
      expect(error.issues).toHaveLength(1);
      expect(error.message).toContain(`kind: must be one of ${SPEC_KINDS.join(', ')}`);
    }
    expect(rejection(JSON.parse('{"steps": 1}')).message).toMatch(/kind: must be one of/);
    for (const document of [[], 'Smoke', 3, null, undefined, true]) {
      expect(rejection(document).message).toMatch(/a spec must be a JSON\/YAML object/);
    }
    const huge = rejection({ kind: 'K'.repeat(10 * 1024 * 1024) });
    expect(huge.message.length).toBeLessThan(1_000);
    expect(huge.message).toMatch(/more characters/);
  });

  it('keeps the error short for a ~10 MB document: huge values, a huge key, 100k unknown keys', () => {
    const tenMb = 'x'.repeat(10 * 1024 * 1024);
    const bigValue = rejection({ kind: 'Smoke', prompt: tenMb, name: tenMb });
    expectNamed(bigValue, ['prompt', 'name']);
    expect(bigValue.message.length).toBeLessThan(2_000);
    const bigKey = rejection({ kind: 'Smoke', [tenMb]: 1 });
    expect(bigKey.message.length).toBeLessThan(2_000);
    const manyKeys = rejection(
      Object.fromEntries([['kind', 'Synthesis'], ...Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i])]),
    );
    expect(manyKeys.message.length).toBeLessThan(20_000);
    expect(manyKeys.message).toContain('personas');
  });

  it('bounds the number of issues listed and counts the rest', () => {
    const document = {
      kind: 'Smoke',
      model: { sampling: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`\u0000${i}`, 1])) },
    };
    const error = rejection(document);
    expect(error.issues.length).toBeLessThanOrEqual(51);
    expect(error.message).toMatch(/and \d+ more problems/);
  });
});

describe('hostile spec files through the CLI reader (mockworld start)', () => {
  let dir: string;
  const file = async (name: string, content: string | Buffer) => {
    const at = path.join(dir, name);
    await writeFile(at, content);
    return at;
  };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-badspec-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a YAML billion-laughs bomb quickly, with bounded memory', async () => {
    const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < 12; i++) {
      const [prev, cur] = [String.fromCharCode(96 + i), String.fromCharCode(97 + i)];
      lines.push(`${cur}: &${cur} [${Array(9).fill(`*${prev}`).join(',')}]`);
    }
    lines.push('kind: Smoke');
    const rss = process.memoryUsage().rss;
    const error = await fileRejection(await file('bomb.yaml', lines.join('\n')));
    expect(error.message).toMatch(/not valid YAML\/JSON: .*alias/i);
    expect(process.memoryUsage().rss - rss).toBeLessThan(200 * 1024 * 1024);
  });

  it('resolves a few aliases but names what they bring in, and refuses merge keys it does not know', async () => {
    const aliases = await fileRejection(
      await file('alias.yaml', 'sampling: &s {temperature: 9}\nkind: Smoke\nmodel: {sampling: *s}\n'),
    );
    expectNamed(aliases, ['model.sampling.temperature']);
    expect(aliases.message).toMatch(/sampling/);
    const merge = await fileRejection(await file('merge.yaml', 'base: &b {steps: 2}\n<<: *b\nkind: Smoke\n'));
    expect(merge.message).toMatch(/base/);
  });

  it('refuses a ~10 MB spec file and a device that never ends, without reading them whole', async () => {
    const huge = await fileRejection(
      await file('huge.yaml', `kind: Smoke\nprompt: "${'x'.repeat(10 * 1024 * 1024)}"\n`),
    );
    expect(huge.message).toMatch(/larger than 1048576 bytes/);
    const endless = await fileRejection('/dev/zero'); // read whole, it would never end
    expect(endless.message).toMatch(/larger than 1048576 bytes/);
  });

  it('names prototype-pollution keys from YAML and JSON files and pollutes nothing', async () => {
    const yaml = await fileRejection(
      await file(
        'proto.yaml',
        'kind: Smoke\n__proto__:\n  steps: 999\nconstructor:\n  prototype:\n    polluted: true\n',
      ),
    );
    expect(yaml.message).toMatch(/__proto__/);
    expect(yaml.message).toMatch(/constructor/);
    const json = await fileRejection(
      await file('proto.json', '{"kind":"Synthesis","tasks":1,"personas":{"path":"p","__proto__":{"x":1}}}'),
    );
    expect(json.message).toMatch(/personas.*__proto__/s);
    expect(Object.prototype).not.toHaveProperty('polluted');
    expect(Object.prototype).not.toHaveProperty('steps');
  });

  it('names syntax errors: duplicate keys, several documents, unknown tags, deep nesting, bad bytes', async () => {
    const cases: Array<[string, string | Buffer, RegExp]> = [
      ['dup.yaml', 'kind: Smoke\nsteps: 1\nsteps: 2\n', /not valid YAML\/JSON: Map keys must be unique/],
      ['multi.yaml', 'kind: Smoke\n---\nkind: Smoke\n', /not valid YAML\/JSON: .*multiple documents/],
      ['tag.yaml', 'kind: !!js/function "function(){}"\n', /kind: must be one of/],
      ['deep.yaml', `kind: Smoke\nx: ${'['.repeat(50_000)}${']'.repeat(50_000)}\n`, /not valid YAML\/JSON/],
      [
        'deep.json',
        `{"kind":"Smoke","x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
        /Unrecognized key: "x"/,
      ],
      [
        'binary.yaml',
        Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x80, 0x0a]),
        /spec must be a JSON\/YAML object|not valid/,
      ],
      ['trailing.json', '{"kind":"Smoke"} {"kind":"Smoke"}', /not valid YAML\/JSON/],
      ['number.yaml', 'kind: Smoke\nsteps: 1e400\n', /steps: .*Infinity/],
    ];
    for (const [name, content, expected] of cases) {
      const error = await fileRejection(await file(name, content));
      expect(error.message, name).toMatch(expected);
      expect(error.message.length, name).toBeLessThan(5_000);
    }
  });

  it('names NUL bytes in a file the same way as in a document', async () => {
    const error = await fileRejection(
      await file('nul.json', '{"kind":"Smoke","prompt":"a\\u0000b","name":"x\\ud800"}'),
    );
    expectNamed(error, ['prompt', 'name']);
  });
});
