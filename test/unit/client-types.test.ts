import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  MockworldClient,
  type GrpoSummary,
  type MockworldRun,
  type SmokeSummary,
  type SpecInput,
} from '../../client/index.js';
import type { GrpoSpecInput, SmokeSpecInput } from '../../schemas/index.js';

/**
 * The client's types as a user's strict TypeScript sees them (checked by `npm run typecheck`,
 * which `npm test` runs and which type-checks the tests): a literal spec is checked against its kind's input type, defaults may be
 * left out, and the run's result has its kind's summary. Never called: no server is needed.
 */
async function userCode(mockworld: MockworldClient): Promise<void> {
  const smoke: SmokeSpecInput = {
    kind: 'Smoke',
    prompt: 'hello',
    steps: 2,
    model: { sampling: { maxTokens: 16 } },
  };
  const run = await mockworld.start(smoke);
  expectTypeOf(run).toEqualTypeOf<MockworldRun<'Smoke'>>();
  expectTypeOf(run.result).returns.resolves.toEqualTypeOf<SmokeSummary>();
  expectTypeOf(run.status).returns.resolves.toHaveProperty('kind').toEqualTypeOf<'Smoke'>();

  const grpo = await mockworld.start({
    kind: 'GrpoTraining',
    dataset: { synthesisRunId: 'synthesis-1' },
    policy: {
      base: { kind: 'tiny', seed: 0 },
      endpoint: { baseUrl: 'http://127.0.0.1:8000/v1', model: 'policy' },
    },
  } satisfies GrpoSpecInput);
  expectTypeOf(grpo.result).returns.resolves.toEqualTypeOf<GrpoSummary>();
  // @ts-expect-error a training run needs its policy
  await mockworld.start({ kind: 'GrpoTraining', dataset: { synthesisRunId: 'synthesis-1' } });

  // @ts-expect-error steps is a number
  await mockworld.start({ kind: 'Smoke', steps: 'two' });
  // @ts-expect-error no such kind
  await mockworld.start({ kind: 'Smok' });
  // A parsed YAML document is `any`: checked when started (SpecValidationError), not compiled.
  await mockworld.start(JSON.parse('{"kind": "Smoke"}') as SpecInput);
}

describe('the typed client', () => {
  it('is typed by the spec kind (a compile-time check; see userCode)', () => {
    expect(typeof userCode).toBe('function');
  });
});
