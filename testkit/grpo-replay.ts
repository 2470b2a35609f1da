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

/**
 * Where a replay differs from the run: the first differing fields of a step's metrics, or the
 * first differing tensor of a step's weights (compared at every step both stores still hold
 * weights for: the newest MOCKWORLD_CHECKPOINT_KEEP), with both values.
 */
export interface ReplayDifference {
  readonly step: number;
  readonly part: 'metrics' | 'weights';
  /** The metric's name, or the tensor's (with the largest absolute difference). */
  readonly field: string;
  readonly recorded: string;
  readonly replayed: string;
}

/**
 * What replaying a run's recorded steps found (see REPLAY), or why it could not replay them:
 * `differences` lists where it differs (empty when identical), in step order.
 */
export type Replay =
  | { sameMetrics: boolean[]; sameWeights: boolean; adamSteps: number[]; differences: ReplayDifference[] }
  | { error: string };

/**
 * Applies the run's recorded steps again in a fresh trainer (own checkpoint directory, the same
 * batches from `trainer_batches`, the same model and config) and compares: identical metrics (but
 * those that measure the machine: duration, tokens per second, peak memory) and
 * bit-identical final weights mean every step was applied exactly once, in order, from the exact
 * state of the step before. Also reads the AdamW update counter of the run's final optimizer state.
 * mockworld_trainer is imported before torch: it fixes the math libraries' thread counts
 * (determinism.py), as in the trainer worker whose steps are replayed.
 */
const REPLAY = String.raw`
import json, shutil, sys, tempfile, traceback
import mockworld_trainer
import torch
from safetensors.torch import load_file
from mockworld_trainer.checkpoint import CheckpointStore
from mockworld_trainer.trainer import Trainer

root, runs = sys.argv[1], json.loads(sys.argv[2])
store = CheckpointStore(root)
# Metrics that measure the machine, not the step (throughput.py): they differ from run to run.
MEASURED = {"duration_s", "tokens_per_s", "peak_memory_bytes", "peak_memory_bytes_per_rank"}
found = {}

def weights(s, run_id, step):
    try:
        d = s.weights_dir(run_id, step)
    except Exception:
        return None
    out = {}
    for f in sorted(d.glob("*.safetensors")):
        out.update(load_file(str(f)))
    return out

def weight_difference(step, mine, theirs):
    if mine.keys() != theirs.keys():
        return {"step": step, "part": "weights", "field": "tensor names", "recorded": str(sorted(mine.keys() - theirs.keys())[:3]), "replayed": str(sorted(theirs.keys() - mine.keys())[:3])}
    worst = None
    for k in sorted(mine):
        a, b = mine[k], theirs[k]
        if a.shape != b.shape:
            return {"step": step, "part": "weights", "field": k, "recorded": f"shape {list(a.shape)}", "replayed": f"shape {list(b.shape)}"}
        if not torch.equal(a, b):
            diff = (a.float() - b.float()).abs()
            i = int(diff.argmax())
            if worst is None or float(diff.flatten()[i]) > worst[0]:
                worst = (float(diff.flatten()[i]), k, i, float(a.flatten()[i]), float(b.flatten()[i]), int((diff > 0).sum()), a.numel())
    if worst is None:
        return None
    _, k, i, x, y, n, total = worst
    return {"step": step, "part": "weights", "field": f"{k}[{i}] ({n} of {total} values differ)", "recorded": repr(x), "replayed": repr(y)}

for run_id, last in runs:
    scratch = tempfile.mkdtemp(prefix="mockworld-replay-")
    try:
        model = store.read_manifest(run_id)["model"]
        ref = Trainer(CheckpointStore(scratch), device=torch.device("cpu"))
        same_metrics, differences = [], []
        for step in range(1, last + 1):
            record = store.read_record(run_id, step)
            again = ref.train_step(run_id, step, record["batch_ref"], model=model, config=record["config"])
            mine, theirs = record["metrics"], again["metrics"]
            fields = sorted((mine.keys() | theirs.keys()) - MEASURED)
            differing = [k for k in fields if mine.get(k) != theirs.get(k)]
            same_metrics.append(not differing)
            differences += [{"step": step, "part": "metrics", "field": k, "recorded": repr(mine.get(k)), "replayed": repr(theirs.get(k))} for k in differing[:5]]
            a, b = weights(store, run_id, step), weights(ref.store, run_id, step)
            if a is not None and b is not None:
                d = weight_difference(step, a, b)
                if d:
                    differences.append(d)
        mine, theirs = weights(store, run_id, last), weights(ref.store, run_id, last)
        optimizer = torch.load(store.step_dir(run_id, last) / "optimizer.pt", map_location="cpu", weights_only=True)
        found[run_id] = {
            "sameMetrics": same_metrics,
            "sameWeights": mine is not None and theirs is not None and weight_difference(last, mine, theirs) is None,
            "adamSteps": sorted({int(s["step"]) for s in optimizer["state"].values()}),
            "differences": differences[:20],
        }
    except Exception as e:
        where = traceback.extract_tb(e.__traceback__)[-1]
        found[run_id] = {"error": f"{type(e).__name__}: {e} (at {where.filename}:{where.lineno})"}
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
