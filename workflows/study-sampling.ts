import { continueAsNew, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { MockworldActivities } from '../activities/index.js';
import { acceptedTarget, type Stream } from '../activities/study/grid.js';
import type { ScalingStudySpec } from '../schemas/scaling-study-spec.js';
import { LONG_ACTIVITY } from './activity-options.js';
import { mapBounded } from './bounded.js';
import { statusQuery } from './controls.js';

const study = proxyActivities<MockworldActivities>(LONG_ACTIVITY);

/** Question ids fetched per page (keeps every payload a few KiB). */
const PAGE = 200;
/** History length past which the workflow continues as new at the next page boundary. */
const HISTORY_BUDGET = 8_000;

/** Work done per question after it is sampled (only on the RS stream). */
export type Derivation = 'repair' | 'embedding';

export interface StudySamplingInput {
  readonly studyId: string;
  readonly stream: Stream;
  readonly derive: readonly Derivation[];
  readonly spec: ScalingStudySpec;
}

/** Where a sampling run is: evolving seed questions first (evolved stream), then sampling. */
export interface SamplingProgress {
  readonly phase: 'evolve' | 'sample';
  readonly offset: number;
  readonly questions: number;
  readonly accepted: number;
  readonly exhausted: number;
}

/**
 * One teacher sampling stream of a study: rejection sampling of every question of its pool (for
 * the evolved stream, the seed questions are evolved first), then the per-question derivations
 * other protocols need (trace repair, embedding selection). Questions are paged by id, so the
 * pool can be any size; the history continues as new before it grows past ~8k events.
 */
export async function StudySampling(
  input: StudySamplingInput,
  carried?: SamplingProgress,
): Promise<SamplingProgress> {
  const { studyId, stream, spec } = input;
  let progress: SamplingProgress = carried ?? {
    phase: stream.questions === 'evolved' ? 'evolve' : 'sample',
    offset: 0,
    questions: 0,
    accepted: 0,
    exhausted: 0,
  };
  // Live counts for the status query (in memory: queries cost no history events).
  let inPage = { questions: 0, accepted: 0, exhausted: 0 };
  setHandler(
    statusQuery,
    () => ({
      kind: 'StudySampling',
      state: 'running',
      done: progress.questions + inPage.questions,
      total: 0,
      stage:
        progress.phase === 'evolve' ? `${stream.name}: evolving seed questions` : `${stream.name}: sampling`,
      counts: {
        accepted: progress.accepted + inPage.accepted,
        exhausted: progress.exhausted + inPage.exhausted,
      },
    }),
    { description: statusQuery.description },
  );

  for (;;) {
    if (workflowInfo().historyLength > HISTORY_BUDGET || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof StudySampling>(input, progress);
    }
    const source = progress.phase === 'evolve' ? 'seed' : stream.questions;
    const ids = await study.listQuestionIds({ studyId, source, offset: progress.offset, limit: PAGE });
    if (ids.length === 0) {
      if (progress.phase === 'evolve') {
        progress = { ...progress, phase: 'sample', offset: 0 };
        continue;
      }
      return progress;
    }
    if (progress.phase === 'evolve') {
      await evolvePage(input, ids);
      progress = { ...progress, offset: progress.offset + ids.length };
      continue;
    }
    const results = await mapBounded(ids, spec.concurrency, async (questionId) => {
      const sampled = await sampleAndDerive(input, questionId);
      inPage = {
        questions: inPage.questions + 1,
        accepted: inPage.accepted + sampled.accepted,
        exhausted: inPage.exhausted + (sampled.exhausted ? 1 : 0),
      };
      return sampled;
    });
    progress = {
      ...progress,
      offset: progress.offset + ids.length,
      questions: progress.questions + ids.length,
      accepted: progress.accepted + results.reduce((sum, r) => sum + r.accepted, 0),
      exhausted: progress.exhausted + results.filter((r) => r.exhausted).length,
    };
    inPage = { questions: 0, accepted: 0, exhausted: 0 };
  }
}

/** Evolves one page of seed questions (the evolved stream), `spec.concurrency` at a time. */
async function evolvePage({ studyId, spec }: StudySamplingInput, ids: readonly string[]): Promise<void> {
  await mapBounded(ids, spec.concurrency, (questionId) =>
    study.evolveQuestion({
      studyId,
      questionId,
      teacher: spec.teacher,
      perSeed: spec.questionSynthesis.perSeed,
      maxSimilarity: spec.questionSynthesis.maxSimilarity,
    }),
  );
}

/** Rejection-samples one question, then the derivations other protocols need of it (RS stream only). */
async function sampleAndDerive(input: StudySamplingInput, questionId: string) {
  const { studyId, stream, spec } = input;
  const sampled = await study.sampleQuestion({
    studyId,
    stream,
    questionId,
    teacher: spec.teacher,
    judge: spec.judge,
    accepted: acceptedTarget(stream, spec),
    maxAttempts: spec.rejectionSampling.maxAttemptsPerQuestion,
    attemptsPerWave: spec.rejectionSampling.attemptsPerWave,
    seed: spec.seed,
    exactMatch: spec.exactMatch,
  });
  if (input.derive.includes('repair')) {
    await study.repairQuestion({
      studyId,
      questionId,
      teacher: spec.teacher,
      judge: spec.judge,
      upTo: Math.max(...spec.budgets),
      exactMatch: spec.exactMatch,
    });
  }
  if (input.derive.includes('embedding') && spec.embeddings) {
    // From the RS pool (the first R accepted), so r = R is RS exactly, as the seed has it.
    await study.selectByEmbedding({
      studyId,
      questionId,
      embeddings: spec.embeddings,
      accepted: acceptedTarget(stream, spec),
    });
  }
  return sampled;
}
