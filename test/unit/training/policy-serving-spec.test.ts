import { describe, expect, it } from 'vitest';
import { GrpoSpecSchema } from '../../../schemas/grpo-spec.js';

/** A GrpoTraining spec with `policy` merged over a valid one. */
function spec(policy: Record<string, unknown>) {
  return {
    kind: 'GrpoTraining',
    dataset: { synthesisRunId: 'syn' },
    policy: {
      base: { kind: 'tiny' },
      endpoint: { baseUrl: 'http://gpu-1:8000/v1', model: 'qwen' },
      ...policy,
    },
  };
}

const issues = (input: unknown) =>
  (GrpoSpecSchema.safeParse(input).error?.issues ?? []).map((i) => `${i.path.join('.')}: ${i.message}`);

describe('policy.serving and policy.base.lora in a GrpoTraining spec', () => {
  it('accepts no serving (the policy endpoint as is), and fills the serving and LoRA defaults', () => {
    expect(GrpoSpecSchema.parse(spec({})).policy.serving).toBeUndefined();
    const parsed = GrpoSpecSchema.parse(
      spec({ base: { kind: 'tiny', lora: { r: 8 } }, serving: { engine: 'vllm', sync: 'lora' } }),
    );
    expect(parsed.policy.serving).toMatchObject({ engine: 'vllm', sync: 'lora', attempts: 4 });
    expect(parsed.policy.base).toMatchObject({ lora: { r: 8, alpha: 32, merge: false } });
    expect(parsed.policy.base.lora!.target_modules).toContain('q_proj');
  });

  it('refuses a lora sync of a run that trains every weight', () => {
    expect(issues(spec({ serving: { engine: 'sglang', sync: 'lora' } }))).toEqual([
      'policy.serving.sync: lora needs policy.base.lora: a run that trains every weight has no adapters to load',
    ]);
  });

  it('refuses a full reload of a LoRA run on vLLM or SGLang unless its merged weights are saved', () => {
    const lora = { kind: 'tiny', lora: { r: 4 } };
    expect(issues(spec({ base: lora, serving: { engine: 'vllm' } }))[0]).toMatch(
      /^policy\.base\.lora\.merge: must be true/,
    );
    expect(
      issues(spec({ base: { ...lora, lora: { r: 4, merge: true } }, serving: { engine: 'vllm' } })),
    ).toEqual([]);
    expect(issues(spec({ base: lora, serving: { engine: 'mockworld' } }))).toEqual([]); // it merges when it loads
  });

  it('names bad serving fields', () => {
    expect(
      issues(spec({ serving: { engine: 'tgi', replicas: ['not a url'] } })).map((i) => i.split(':')[0]),
    ).toEqual(['policy.serving.engine', 'policy.serving.replicas.0']);
  });
});
