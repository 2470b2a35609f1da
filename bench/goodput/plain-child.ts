/**
 * Entry point, not a library: one attempt of the goodput benchmark's plain loop (bench/goodput.ts),
 * in a process of its own so that the bench can SIGKILL it as a crashing trainer process is killed.
 * It runs the rollout phase of one GRPO iteration with `runPlain` of bench/grpo/plain.ts (the same
 * activities, in the same order and concurrency as GrpoTraining → GrpoGroup) and says on stdout,
 * one JSON line each, when it is ready (its modules loaded) and when the iteration is done.
 * Input: BENCH_GOODPUT_PLAIN = JSON { databaseUrl, runId, spec }.
 */
import { closePools } from '../../activities/store/db.js';
import { runPlain } from '../grpo/plain.js';
import type { GrpoBenchSpec } from '../grpo/world.js';

const input = JSON.parse(process.env.BENCH_GOODPUT_PLAIN ?? '{}') as {
  databaseUrl: string;
  runId: string;
  spec: GrpoBenchSpec;
};
console.log(JSON.stringify({ ready: true }));
try {
  const { rolloutMs } = await runPlain(input.databaseUrl, input.runId, input.spec);
  await closePools();
  console.log(JSON.stringify({ done: true, rolloutMs }));
  process.exit(0);
} catch (error) {
  console.error(error);
  process.exit(1);
}
