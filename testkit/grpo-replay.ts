/**
 * The exactly-once proof of a GRPO run's trainer steps, shared by the GRPO fault tests and the
 * chaos audit so that both prove it the same way: the run's recorded steps are applied again in a
 * fresh trainer and the results compared.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
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
const HELPERS = String.raw`
import json, shutil, sys, tempfile, traceback
import mockworld_trainer
import torch
from safetensors.torch import load_file
from mockworld_trainer.checkpoint import CheckpointStore
from mockworld_trainer.trainer import Trainer

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

def compare(step, record, again, ref_store, run_id, same_metrics, differences):
    mine, theirs = record["metrics"], again["metrics"]
    fields = sorted((mine.keys() | theirs.keys()) - MEASURED)
    differing = [k for k in fields if mine.get(k) != theirs.get(k)]
    same_metrics.append(not differing)
    differences += [{"step": step, "part": "metrics", "field": k, "recorded": repr(mine.get(k)), "replayed": repr(theirs.get(k))} for k in differing[:5]]
    a, b = weights(store, run_id, step), weights(ref_store, run_id, step)
    if a is not None and b is not None:
        d = weight_difference(step, a, b)
        if d:
            differences.append(d)
`;

const REPLAY = String.raw`${HELPERS}
root, runs = sys.argv[1], json.loads(sys.argv[2])
store = CheckpointStore(root)

for run_id, last in runs:
    scratch = tempfile.mkdtemp(prefix="mockworld-replay-")
    try:
        model = store.read_manifest(run_id)["model"]
        ref = Trainer(CheckpointStore(scratch), device=torch.device("cpu"))
        same_metrics, differences = [], []
        for step in range(1, last + 1):
            record = store.read_record(run_id, step)
            again = ref.train_step(run_id, step, record["batch_ref"], model=model, config=record["config"])
            compare(step, record, again, ref.store, run_id, same_metrics, differences)
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
 * REPLAY for the steps of a trainer group: run under torchrun with as many ranks as the group had
 * (every rank joins; rank 0 sends each step to the others, as the trainer worker does, and
 * compares), since a group's steps are bit-identical to another group's of that size, not to one
 * process's. The AdamW update counter is read from the final step's DCP shards, as a single
 * process resumes them, once the group has left. Rank 0 writes what it found to the file argv[4].
 */
const REPLAY_GROUP = String.raw`${HELPERS}
from mockworld_trainer.group import GroupTrainer, follow, join, leave
from mockworld_trainer.ranks import ALONE

root, runs, scratch, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
store = CheckpointStore(root)
ranks, device = join()
ref = Trainer(CheckpointStore(scratch), device=device, ranks=ranks)
if ranks.rank != 0:
    follow(ref)
    leave(ref)
    sys.exit(0)
group = GroupTrainer(ref)
for run_id, last in runs:
    try:
        model = store.read_manifest(run_id)["model"]
        same_metrics, differences = [], []
        for step in range(1, last + 1):
            record = store.read_record(run_id, step)
            again = group.train_step(run_id, step, record["batch_ref"], model=model, config=record["config"])
            compare(step, record, again, ref.store, run_id, same_metrics, differences)
        mine, theirs = weights(store, run_id, last), weights(ref.store, run_id, last)
        found[run_id] = {
            "sameMetrics": same_metrics,
            "sameWeights": mine is not None and theirs is not None and weight_difference(last, mine, theirs) is None,
            "differences": differences[:20],
        }
    except Exception as e:
        where = traceback.extract_tb(e.__traceback__)[-1]
        found[run_id] = {"error": f"{type(e).__name__}: {e} (at {where.filename}:{where.lineno})"}
group.close()
leave(ref)
for run_id, last in runs:
    if "error" in found[run_id]:
        continue
    try:
        alone = Trainer(store, device=torch.device("cpu"), ranks=ALONE)
        state = alone._load_state(run_id, last, alone._run_spec(run_id, None, last))
        found[run_id]["adamSteps"] = sorted({int(s["step"]) for s in state.optimizer.state.values()})
        alone.release()
    except Exception as e:
        where = traceback.extract_tb(e.__traceback__)[-1]
        found[run_id] = {"error": f"reading the AdamW state: {type(e).__name__}: {e} (at {where.filename}:{where.lineno})"}
with open(out, "w") as f:
    json.dump(found, f)
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
  ranks = 1,
): Promise<Record<string, Replay>> {
  if (ranks > 1) return replayInGroup(checkpoints, runs, env, ranks);
  const { stdout } = await execFileAsync(
    path.join(REPO_ROOT, '.venv-trainer', 'bin', 'python'),
    ['-c', REPLAY, checkpoints, JSON.stringify(runs)],
    { cwd: REPO_ROOT, env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, Replay>;
}

/** REPLAY_GROUP under `torchrun --nproc-per-node ranks` (CPU, gloo, one thread per rank). */
async function replayInGroup(
  checkpoints: string,
  runs: ReadonlyArray<readonly [runId: string, last: number]>,
  env: Record<string, string>,
  ranks: number,
): Promise<Record<string, Replay>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-group-replay-'));
  try {
    const script = path.join(dir, 'replay_group.py');
    const out = path.join(dir, 'found.json');
    await writeFile(script, REPLAY_GROUP);
    await execFileAsync(
      path.join(REPO_ROOT, '.venv-trainer', 'bin', 'torchrun'),
      [
        '--standalone',
        '--nproc-per-node',
        String(ranks),
        script,
        checkpoints,
        JSON.stringify(runs),
        path.join(dir, 'store'),
        out,
      ],
      {
        cwd: REPO_ROOT,
        env: {
          ...process.env,
          ...env,
          MOCKWORLD_TRAINER_DEVICE: 'cpu',
          OMP_NUM_THREADS: '1',
          // A rank that fails leaves the other in a collective: bounded, not the half hour default.
          MOCKWORLD_GROUP_TIMEOUT_S: '600',
        },
        maxBuffer: 16 * 1024 * 1024,
        timeout: 30 * 60_000,
      },
    );
    return JSON.parse(await readFile(out, 'utf8')) as Record<string, Replay>;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
