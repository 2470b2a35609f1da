/**
 * The GRPO benchmark's knobs, read once from the environment (bench/grpo.ts lists them), and its
 * targets.
 */
const list = (value: string) =>
  value
    .split(',')
    .filter((s) => s.trim() !== '')
    .map(Number);

export const SETTINGS = {
  scaleTasks: Number(process.env.BENCH_GRPO_SCALE_TASKS ?? 128),
  rolloutsPerTask: Number(process.env.BENCH_GRPO_N ?? 16),
  /** Tasks per throughput run. */
  throughputTasks: Number(process.env.BENCH_GRPO_TASKS ?? 32),
  /** Tasks of the unmeasured first pass of both paths (JIT and connection warm-up of everything). */
  warmupTasks: Number(process.env.BENCH_GRPO_WARMUP_TASKS ?? 8),
  groupsInFlight: Number(process.env.BENCH_GRPO_GROUPS_IN_FLIGHT ?? 16),
  latenciesMs: list(process.env.BENCH_LATENCIES ?? '50,0,2000'),
  skipScale: process.env.BENCH_GRPO_SKIP_SCALE === '1',
  trainer: process.env.BENCH_TRAINER === 'python' ? ('python' as const) : ('standin' as const),
  /** Extra Worker options (JSON) for tuning experiments, merged over the CPU worker's (workers/cpu-worker.ts). */
  workerOverrides: JSON.parse(process.env.BENCH_GRPO_WORKER_OPTIONS ?? '{}') as Record<string, unknown>,
  /** Latencies at which the Temporal path also runs with the worker settings before the tuning. */
  beforeLatenciesMs: list(process.env.BENCH_GRPO_BEFORE_LATENCIES ?? '50'),
  /** A run that takes longer than this is a hang: it is terminated and the bench fails. */
  runTimeoutMs: Number(process.env.BENCH_GRPO_TIMEOUT_MS ?? 420_000),
};

/** The CPU worker's settings before bench/grpo.ts measured them: the SDK's eager reservations (3). */
export const BEFORE_TUNING = { maxEagerActivityReservationsPerWorkflowTask: 3 };

/** Targets of DESIGN.md (claim-check, per workflow run) and of the issue (Temporal/plain rollouts/s). */
export const TARGETS = { events: 10_000, payloadBytes: 256 * 1024, ratio: 0.9 };
