/**
 * Fault (j): a trainer rank SIGKILLed. With this kind the harness's trainer is a group of
 * {@link GROUP_RANKS} CPU ranks under torchrun (`torchrun --standalone --nproc-per-node 2
 * --max-restarts N -m mockworld_trainer.worker`, as workers/trainer/tests/test_group_worker.py
 * launches one): rank 0 is the Temporal worker, the other rank follows it through
 * torch.distributed (workers/trainer/mockworld_trainer/group.py). The fault SIGKILLs a non-zero
 * rank (its pid found among torchrun's children by the RANK in its environment), the first
 * `inStepKills` of them while a trainer step runs on the group. What the README claims must then
 * happen: the killed rank stops the group, torchrun starts it again (its restart count goes up,
 * rank 0 has a new pid), the new rank 0 polls, and Temporal retries the step cut off, which is
 * applied from the last committed checkpoint; the audit's fresh replay (a group of the same size)
 * must be bit-identical and no step applied twice or skipped.
 *
 * Back = the restarted group's rank 0 polls the trainer queue; recovered = also every activity
 * the group was running at the kill has finished (a trainer step: run again and finished; or
 * finished by the attempt the kill met, had it been done).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from '../../deploy/paths.js';
import type { PendingActivity, TemporalObserver } from './observe.js';
import { childrenOf, environOf, sleep, workerIdentity, type Started, type Supervised } from './components.js';
import type { FaultContext, FaultRecord, Injector } from './types.js';

/** Ranks of the harness's trainer group: rank 0 and one follower, one CPU thread each. */
export const GROUP_RANKS = 2;
/**
 * torchrun's --max-restarts: more than any run injects, so that every rank kill is restarted by
 * torchrun itself; a group that spends them exits, and the harness's supervisor records that
 * as an unplanned exit and starts a new one.
 */
export const GROUP_MAX_RESTARTS = 100;

/** One rank of a running group. */
export interface GroupRank {
  readonly pid: number;
  readonly rank: number;
  /** torchrun's TORCHELASTIC_RESTART_COUNT of the rank's start. */
  readonly restart: number;
}

/** torchrun of the trainer group; `ready` resolves with rank 0's first "trainer worker:" line. */
export function launchTrainerGroup(
  env: Record<string, string>,
): Started & { readonly ready: Promise<string> } {
  const torchrun = path.join(REPO_ROOT, '.venv-trainer', 'bin', 'torchrun');
  const child = spawn(
    torchrun,
    [
      '--standalone',
      '--nproc-per-node',
      String(GROUP_RANKS),
      '--max-restarts',
      String(GROUP_MAX_RESTARTS),
      '-m',
      'mockworld_trainer.worker',
    ],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env, MOCKWORLD_TRAINER_DEVICE: 'cpu', OMP_NUM_THREADS: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  const ready = new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-8_000);
      const line = output.split('\n').find((l) => /trainer worker:/.test(l));
      if (line) resolve(line);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`torchrun exited with ${code}:\n${output.slice(-3_000)}`)));
    child.once('error', (error) =>
      reject(new Error(`cannot start ${torchrun} (${error.message}): run bash deploy/trainer-venv.sh`)),
    );
  });
  return { child, ready };
}

/** The ranks torchrun `pid` runs now (its children with a RANK), lowest rank first. */
export async function groupRanks(pid: number | undefined): Promise<GroupRank[]> {
  if (pid === undefined) return [];
  const ranks: GroupRank[] = [];
  for (const child of await childrenOf(pid)) {
    const env = await environOf(child);
    if (env?.RANK === undefined) continue;
    ranks.push({ pid: child, rank: Number(env.RANK), restart: Number(env.TORCHELASTIC_RESTART_COUNT ?? 0) });
  }
  // A rank of the attempt before may linger a moment while torchrun stops it: the newest attempt's.
  const newest = Math.max(-1, ...ranks.map((r) => r.restart));
  return ranks.filter((r) => r.restart === newest).sort((a, b) => a.rank - b.rank);
}

/** Rank 0's pid (the Temporal worker's identity) of the group torchrun `pid` runs now. */
export async function rankZeroPid(pid: number | undefined): Promise<number | undefined> {
  return (await groupRanks(pid)).find((r) => r.rank === 0)?.pid;
}

/** Where the harness watches the group from. */
export interface RankKillDeps {
  readonly observer: TemporalObserver;
  readonly group: Supervised;
  readonly queue: string;
  /** Rank-0 pids seen polling (the harness's set: a pid in it is serving). */
  readonly ready: Set<number>;
  /** Of the rank kills, how many (the first ones) wait for a trainer step no rank kill has met. */
  readonly inStepKills: number;
  /** How long such a kill waits in all for a fresh step before it kills outside one. */
  readonly freshStepWaitMs: number;
  readonly recoveryTimeoutMs: number;
  /** Whether Temporal answers now (false between a crash of the dev server and its restart). */
  readonly temporalUp: () => boolean;
}

/** The injector of fault (j); see the module comment. */
export function rankKillInjector(ctx: FaultContext, deps: RankKillDeps): Injector {
  const { observer, group, queue, ready } = deps;
  const running = async (identity: string) => {
    const views = deps.temporalUp() ? await observer.snapshot(3_000) : undefined;
    return views?.flatMap((v) => v.pending.filter((a) => a.started && a.identity === identity));
  };
  // Steps (workflow, activity) a rank kill has met: an in-step kill waits for another one. Aimed
  // at whatever step runs, the first full run's kills met the retries of one step five times over
  // (its attempt 6), and the first kill's recovery then measured the four after it.
  const met = new Set<string>();
  const keyOf = (a: PendingActivity) => `${a.workflowId}\n${a.activityId}`;
  const freshStepRunning = async (identity: string) =>
    (await running(identity))?.some((a) => a.type === 'trainer.grpoStep' && !met.has(keyOf(a))) === true;
  let waitingSince: { seq: number; at: number } | undefined;

  return async (seq, random) => {
    if (waitingSince?.seq !== seq) waitingSince = { seq, at: Date.now() };
    const torchrun = group.pid;
    const ranks = await groupRanks(torchrun);
    const zero = ranks.find((r) => r.rank === 0);
    const followers = ranks.filter((r) => r.rank !== 0);
    if (torchrun === undefined || !zero || followers.length === 0 || !ready.has(zero.pid)) return 'later';
    const identity = workerIdentity(zero.pid);
    if (seq <= deps.inStepKills) {
      // Bounded wait for a step no rank kill has met to be running on the group, so that the kill
      // lands inside one; asked again later (up to freshStepWaitMs in all), then it kills anyway.
      const deadline = Date.now() + 60_000;
      let fresh = await freshStepRunning(identity);
      while (!fresh && Date.now() < deadline && !ctx.stopping()) {
        await sleep(250);
        fresh = await freshStepRunning(identity);
      }
      if (!fresh && Date.now() - waitingSince.at < deps.freshStepWaitMs) return 'later';
    }
    // The group as it is now (a wait may have outlived it: an earlier fault of another kind).
    const now = await groupRanks(group.pid);
    const candidates = now.filter((r) => r.rank !== 0);
    const victim = candidates[Math.floor(random() * candidates.length)];
    const rank0 = now.find((r) => r.rank === 0);
    if (!victim || !rank0 || rank0.pid !== zero.pid) return 'later';
    const before = await running(identity);
    const inStep = before?.some((a) => a.type === 'trainer.grpoStep') === true;
    for (const a of before ?? []) if (a.type === 'trainer.grpoStep') met.add(keyOf(a));
    const at = Date.now();
    try {
      process.kill(victim.pid, 'SIGKILL');
    } catch {
      return 'later'; // gone meanwhile
    }
    const record: FaultRecord = {
      kind: 'trainer-rank-kill',
      seq,
      atS: ctx.seconds(at),
      detail:
        `rank ${victim.rank} pid ${victim.pid} of torchrun pid ${torchrun} (group restart ${victim.restart})` +
        `${inStep ? ', inside a trainer step' : ''} (${before?.length ?? '?'} activities running on the group)`,
      runsInProgress: ctx.runsInProgress(),
      notes: [],
    };
    ctx.record(record);
    ctx.log(`fault (j) #${seq}: SIGKILL ${record.detail}`);

    // Back: torchrun started the group again (a higher restart count) and its rank 0 polls.
    let backAt: number | undefined;
    let restartedAs: GroupRank | undefined;
    const backDeadline = at + deps.recoveryTimeoutMs;
    let replaced = false;
    while (Date.now() < backDeadline && !ctx.stopping()) {
      const zeroNow = (await groupRanks(group.pid)).find((r) => r.rank === 0);
      if (group.pid !== torchrun && !replaced) {
        replaced = true; // torchrun itself failed: the supervisor's restart, not torchrun's
        record.notes.push(`torchrun pid ${torchrun} exited (its supervisor started another)`);
      }
      if (
        zeroNow &&
        zeroNow.pid !== zero.pid &&
        (await observer.polling(queue, workerIdentity(zeroNow.pid), 'activity'))
      ) {
        ready.add(zeroNow.pid);
        backAt = Date.now();
        restartedAs = zeroNow;
        break;
      }
      await sleep(250);
    }
    if (backAt === undefined || !restartedAs) {
      record.notes.push('the group did not poll again in time (no new rank 0 polling)');
      return 'done';
    }
    record.backMs = backAt - at;
    record.notes.push(`group restart ${restartedAs.restart}, rank 0 pid ${restartedAs.pid}`);
    const affected = before ?? [];
    record.interrupted = affected.length;
    ctx.monitor(
      (async () => {
        const finishedAt = await activitiesFinished(observer, affected, ctx.watchUntil(at), record);
        if (finishedAt !== undefined) record.recoveryMs = Math.max(finishedAt, backAt) - at;
        else record.notes.push('an activity cut off by the kill did not finish in time');
      })(),
    );
    return 'done';
  };
}

/**
 * When every activity of `affected` has finished (no longer pending, or its run closed); notes
 * which of them ran again (a later attempt started) before finishing. Undefined at `deadline`.
 */
async function activitiesFinished(
  observer: TemporalObserver,
  affected: readonly PendingActivity[],
  deadline: () => number,
  record: FaultRecord,
): Promise<number | undefined> {
  let remaining = [...affected];
  const ranAgain = new Map<string, number>(); // activity -> the latest attempt seen after the kill's
  while (remaining.length > 0) {
    if (Date.now() > deadline()) return undefined;
    const next: PendingActivity[] = [];
    for (const a of remaining) {
      const view = await observer.describe(a.workflowId);
      if (!view) {
        next.push(a); // unknown now
        continue;
      }
      const key = `${a.workflowId}\n${a.activityId}`;
      const now = view.running ? view.pending.find((p) => p.activityId === a.activityId) : undefined;
      if (now && (now.attempt > a.attempt || (now.started && now.identity !== a.identity)))
        ranAgain.set(key, now.attempt);
      if (now) next.push(a);
      else {
        const again = ranAgain.get(key);
        record.notes.push(
          `${a.type} of ${a.workflowId.replace(/-[a-z0-9]+-r/, '-r')} finished` +
            (again !== undefined
              ? ` after running again (attempt ${again}; cut at ${a.attempt})`
              : ` (no later attempt seen after attempt ${a.attempt})`),
        );
      }
    }
    remaining = next;
    if (remaining.length > 0) await sleep(500);
  }
  return Date.now();
}
