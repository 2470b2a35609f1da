/**
 * The exactly-once proof of a GRPO run's trainer steps, shared by the GRPO fault tests and the
 * chaos audit so that both prove it the same way: the run's recorded steps are applied again in a
 * fresh trainer and the results compared.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../deploy/paths.js';

const execFileAsync = promisify(execFile);

/** What replaying a run's recorded steps found (see REPLAY), or why it could not replay them. */
export type Replay =
  { sameMetrics: boolean[]; sameWeights: boolean; adamSteps: number[] } | { error: string };

/**
 * Applies the run's recorded steps again in a fresh trainer (own checkpoint directory, the same
 * batches from `trainer_batches`, the same model and config) and compares: identical metrics and
 * bit-identical final weights mean every step was applied exactly once, in order, from the exact
 * state of the step before. Also reads the AdamW update counter of the run's final optimizer state.
 */
const REPLAY = String.raw`
import json, shutil, sys, tempfile
import torch
from safetensors.torch import load_file
from mockworld_trainer.checkpoint import CheckpointStore
from mockworld_trainer.trainer import Trainer

root, runs = sys.argv[1], json.loads(sys.argv[2])
store = CheckpointStore(root)
found = {}
for run_id, last in runs:
    scratch = tempfile.mkdtemp(prefix="mockworld-replay-")
    try:
        model = store.read_manifest(run_id)["model"]
        ref = Trainer(CheckpointStore(scratch), device=torch.device("cpu"))
        same_metrics = []
        for step in range(1, last + 1):
            record = store.read_record(run_id, step)
            again = ref.train_step(run_id, step, record["batch_ref"], model=model, config=record["config"])
            strip = lambda m: {k: v for k, v in m.items() if k != "duration_s"}
            same_metrics.append(strip(record["metrics"]) == strip(again["metrics"]))

        def weights(s):
            out = {}
            for f in sorted(s.weights_dir(run_id, last).glob("*.safetensors")):
                out.update(load_file(str(f)))
            return out

        mine, theirs = weights(store), weights(ref.store)
        optimizer = torch.load(store.step_dir(run_id, last) / "optimizer.pt", map_location="cpu", weights_only=True)
        found[run_id] = {
            "sameMetrics": same_metrics,
            "sameWeights": mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine),
            "adamSteps": sorted({int(s["step"]) for s in optimizer["state"].values()}),
        }
    except Exception as e:
        found[run_id] = {"error": f"{type(e).__name__}: {e}"}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
print(json.dumps(found))
`;

/**
 * Replays steps 1..`last` of every `[runId, last]` of `runs` (checkpoints under `checkpoints`) in one
 * Python process of the trainer's venv, so torch loads once. A run that fails to replay gets
 * `{ error }`; the promise rejects only when the process itself fails.
 */
export async function replayRecordedSteps(
  checkpoints: string,
  runs: ReadonlyArray<readonly [runId: string, last: number]>,
  env: Record<string, string>,
): Promise<Record<string, Replay>> {
  const { stdout } = await execFileAsync(
    path.join(REPO_ROOT, '.venv-trainer', 'bin', 'python'),
    ['-c', REPLAY, checkpoints, JSON.stringify(runs)],
    { cwd: REPO_ROOT, env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, Replay>;
}
