/**
 * The shape of a scaling study, derived from its spec alone (pure, also used by the workflow):
 * which teacher sampling streams it needs and which SFT cells it trains.
 */
import type { Protocol, ScalingStudySpec } from '../../schemas/scaling-study-spec.js';

/** One sampling configuration of the teacher; its attempts are stored under its name. */
export interface Stream {
  readonly name: 'rs' | 'temperature-low' | 'temperature-greedy' | 'persona' | 'evolved';
  readonly temperature: number;
  readonly persona: boolean;
  /** Which questions it samples: the seed pool, or the questions evolved from it. */
  readonly questions: 'seed' | 'evolved';
}

/** One SFT run and its evaluation: protocol p on pool Q_q at budget r with training seed s. */
export interface Cell {
  readonly cellId: string;
  readonly protocol: Protocol;
  /** Quarters of the seed pool: Q1 ⊂ Q2 ⊂ Q4. */
  readonly pool: 1 | 2 | 4;
  readonly budget: number;
  readonly seed: number;
}

/** The stream a protocol draws its responses from (derived protocols reuse the RS stream). */
export function streamOf(protocol: Protocol): Stream['name'] {
  switch (protocol) {
    case 'temperature-0.6':
      return 'temperature-low';
    case 'temperature-0.001':
      return 'temperature-greedy';
    case 'persona':
      return 'persona';
    case 'question-synthesis':
      return 'evolved';
    default:
      return 'rs';
  }
}

/** The streams a study samples, RS first (every other protocol is compared with it). */
export function studyStreams(spec: ScalingStudySpec): Stream[] {
  const rsTemperature = spec.teacher.sampling.temperature;
  const all: Record<Stream['name'], Stream> = {
    rs: { name: 'rs', temperature: rsTemperature, persona: false, questions: 'seed' },
    'temperature-low': {
      name: 'temperature-low',
      temperature: spec.temperatures.low,
      persona: false,
      questions: 'seed',
    },
    'temperature-greedy': {
      name: 'temperature-greedy',
      temperature: spec.temperatures.greedy,
      persona: false,
      questions: 'seed',
    },
    persona: { name: 'persona', temperature: rsTemperature, persona: true, questions: 'seed' },
    evolved: { name: 'evolved', temperature: rsTemperature, persona: false, questions: 'evolved' },
  };
  const names = new Set<Stream['name']>(['rs', ...spec.protocols.map(streamOf)]);
  return [...names].map((name) => all[name]);
}

/**
 * R for a stream: RS collects the spec's R (the embedding selection picks from all of them, and
 * source expansion trains Q1 at r = B); other streams need only their largest budget.
 */
export function acceptedTarget(stream: Stream, spec: ScalingStudySpec): number {
  if (stream.name === 'rs') return spec.rejectionSampling.acceptedPerQuestion;
  if (stream.questions === 'evolved') return Math.max(...spec.questionSynthesis.budgets);
  return Math.max(...spec.budgets);
}

export function cellId(cell: Omit<Cell, 'cellId'>): string {
  return `${cell.protocol}-q${cell.pool}-r${cell.budget}-s${cell.seed}`;
}

/**
 * Every cell of the grid, each once: each protocol at every budget on the full pool (question
 * synthesis at its own budgets); RS always, as the reference; source expansion's matched-budget
 * buckets B = q·r on Q1, Q2, Q4 (seed Sec. 6); and for question synthesis RS at the fixed-r and
 * matched-budget (r = 4k) references.
 */
export function studyCells(spec: ScalingStudySpec): Cell[] {
  const cells = new Map<string, Cell>();
  const add = (protocol: Protocol, pool: 1 | 2 | 4, budget: number) => {
    for (let seed = 0; seed < spec.trainingSeeds; seed++) {
      const id = cellId({ protocol, pool, budget, seed });
      if (!cells.has(id)) cells.set(id, { cellId: id, protocol, pool, budget, seed });
    }
  };
  const protocols = new Set<Protocol>(['rs', ...spec.protocols]);
  for (const protocol of protocols) {
    if (protocol === 'question-synthesis') continue;
    for (const r of spec.budgets) add(protocol, 4, r);
  }
  if (protocols.has('question-synthesis')) {
    for (const k of spec.questionSynthesis.budgets) {
      add('question-synthesis', 4, k);
      add('rs', 4, k);
      add('rs', 4, 4 * k);
    }
  }
  for (const bucket of spec.sourceExpansion?.buckets ?? []) {
    for (const q of [4, 2, 1] as const) add('rs', q, bucket / q);
  }
  return [...cells.values()];
}

/**
 * Learning rate of SFT step k (1-based) of n: linear warm-up over the first warmupRatio·n steps,
 * then cosine decay to the minimum (seed App. 11.4: warm-up plus cosine, 5e-6 → 5e-7).
 */
export function sftLearningRate(
  step: number,
  totalSteps: number,
  sft: { learningRate: number; minLearningRate: number; warmupRatio: number },
): number {
  const warmup = Math.ceil(sft.warmupRatio * totalSteps);
  if (step <= warmup) return (sft.learningRate * step) / warmup;
  const progress = (step - warmup) / Math.max(1, totalSteps - warmup);
  return (
    sft.minLearningRate + (sft.learningRate - sft.minLearningRate) * 0.5 * (1 + Math.cos(Math.PI * progress))
  );
}
