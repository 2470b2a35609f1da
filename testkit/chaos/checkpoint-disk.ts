/**
 * Fault (h): the checkpoint directory's disk is full. The harness mounts a small tmpfs of its own
 * on the checkpoint directory (root in a container with CAP_SYS_ADMIN; the machine's disks are
 * never touched), and a fault fills it with one file while a trainer step runs, holds it full, and
 * deletes the file. A step whose save hits the full disk fails (ENOSPC), its half-written
 * temporary directory is removed, and the retried attempt applies it once the space is back: the
 * audit must find every step applied exactly once, and a fresh replay bit-identical.
 *
 * Where mounting is refused (no CAP_SYS_ADMIN: an unprivileged container, not root) there is no
 * filesystem of the harness's own to fill, and filling a shared one would break the machine:
 * the fault kind is skipped, with that reason in the result.
 */
import { execFile } from 'node:child_process';
import { open, unlink } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { sleep } from './components.js';
import type { FaultContext, FaultRecord, Injector } from './types.js';

const run = promisify(execFile);
const FILLER = '.chaos-disk-filler';

/** A small filesystem of the harness's own, mounted on `dir`. */
export interface SmallDisk {
  readonly dir: string;
  /** Writes one file until the filesystem refuses (ENOSPC); returns the bytes written. */
  fill(): Promise<number>;
  /** Deletes that file. */
  free(): Promise<void>;
  /** Unmounts (lazily when still busy). */
  unmount(): Promise<void>;
}

/** Mounts a `sizeMb` tmpfs on `dir` (which must exist), or says why it cannot. */
export async function mountSmallDisk(dir: string, sizeMb: number): Promise<SmallDisk | { reason: string }> {
  try {
    await run('mount', [
      '-t',
      'tmpfs',
      '-o',
      `size=${sizeMb}m,mode=0777`,
      'mockworld-chaos-checkpoints',
      dir,
    ]);
  } catch (error) {
    const e = error as Error & { stderr?: string };
    return {
      reason: `cannot mount a ${sizeMb} MB tmpfs on the checkpoint directory: ${(e.stderr || e.message).trim()}`,
    };
  }
  const filler = path.join(dir, FILLER);
  return {
    dir,
    async fill() {
      const file = await open(filler, 'w');
      let written = 0;
      try {
        // Large blocks first, then small ones, until not one more byte fits.
        for (const size of [1 << 20, 1 << 12, 1]) {
          const block = Buffer.alloc(size);
          for (;;) {
            try {
              written += (await file.write(block)).bytesWritten;
            } catch (error) {
              if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
              throw error;
            }
          }
        }
      } finally {
        await file.close().catch(() => undefined);
      }
      return written;
    },
    async free() {
      await unlink(filler).catch(() => undefined);
    },
    async unmount() {
      await run('umount', [dir]).catch(() => run('umount', ['-l', dir]));
    },
  };
}

export interface DiskFullOptions {
  /**
   * How long the disk stays full at least, drawn uniformly from [min, max] ms; longer (up to
   * {@link MAX_HOLD_MS}) while the trainer step that was running has not yet met it (a step on a
   * busy machine can compute for longer than the hold before it saves).
   */
  readonly holdMs: readonly [number, number];
  /** How long a fault waits for a trainer step no full disk has met yet, before it fills anyway. */
  readonly freshStepWaitMs: number;
}

const MAX_HOLD_MS = 120_000;

/** A trainer step activity as the server sees it: which one, its attempt, whether it runs, why the last attempt failed. */
export interface StepAttempt {
  readonly workflowId: string;
  readonly activityId: string;
  readonly attempt: number;
  readonly started: boolean;
  readonly lastFailure?: string;
}

const NO_SPACE = /No space left|ENOSPC/i;

/**
 * The injector of fault (h). `runningStep` is the trainer step attempt running now, if any: the
 * fault waits for one that no earlier full disk has met (up to `freshStepWaitMs`, asking
 * the schedule to come back while it waits), so that its save meets the full disk. One step meeting
 * every full disk in turn would be starved: the first full run aimed 7 of them at one step, which
 * was applied at the last attempt its retry policy allows. `stepNow` is where that step is now
 * (undefined: finished; 'unknown': the server cannot say).
 *
 * Cut off = attempts of that step that failed for want of space; recovered = once the space is
 * freed, that step runs again (a later attempt started) or has finished: the work the full disk
 * failed resumed, whatever else (a trainer kill) happens to it later. No step running at the fault:
 * nothing was cut off, recovered when the space is freed.
 */
export function diskFullInjector(
  ctx: FaultContext,
  disk: SmallDisk,
  options: DiskFullOptions,
  runningStep: () => Promise<StepAttempt | undefined>,
  stepNow: (step: StepAttempt) => Promise<StepAttempt | undefined | 'unknown'>,
): Injector {
  const met = new Set<string>(); // steps (workflow, activity) a full disk has met
  const keyOf = (s: StepAttempt) => `${s.workflowId}\n${s.activityId}`;
  let waitingSince: { seq: number; at: number } | undefined;
  return async (seq, random) => {
    if (waitingSince?.seq !== seq) waitingSince = { seq, at: Date.now() };
    const fresh = async () => {
      const running = await runningStep();
      return running && !met.has(keyOf(running)) ? running : undefined;
    };
    const waitUntil = Date.now() + 60_000;
    let step = await fresh();
    while (!step && Date.now() < waitUntil && !ctx.stopping()) {
      await sleep(250);
      step = await fresh();
    }
    if (!step && Date.now() - waitingSince.at < options.freshStepWaitMs) return 'later';
    if (step) met.add(keyOf(step));
    const hold = options.holdMs[0] + random() * (options.holdMs[1] - options.holdMs[0]);
    const at = Date.now();
    const bytes = await disk.fill();
    const record: FaultRecord = {
      kind: 'checkpoint-disk-full',
      seq,
      atS: ctx.seconds(at),
      detail: `checkpoint tmpfs filled (${(bytes / 2 ** 20).toFixed(1)} MiB) for at least ${(hold / 1000).toFixed(0)} s${step ? `, trainer step attempt ${step.attempt} of ${step.workflowId} running` : ', no trainer step running'}`,
      runsInProgress: ctx.runsInProgress(),
      interrupted: 0,
      notes: [],
    };
    ctx.record(record);
    ctx.log(`fault (h) #${seq}: ${record.detail}`);
    // Full for the drawn time, and until the step that was running has met the disk (its attempt
    // failed, for want of space or another fault's doing) or ended.
    let seen = step;
    let ended = false;
    for (;;) {
      const heldLongEnough = Date.now() - at >= hold;
      if (ctx.stopping() || Date.now() - at >= MAX_HOLD_MS) break;
      if (seen && !ended) {
        const now = await stepNow(seen);
        if (now === undefined) ended = true;
        else if (now !== 'unknown' && now.attempt > seen.attempt) {
          if (NO_SPACE.test(now.lastFailure ?? '')) record.interrupted! += now.attempt - seen.attempt;
          else
            record.notes.push(
              `attempt ${seen.attempt} failed otherwise: ${(now.lastFailure ?? '').slice(0, 100)}`,
            );
          seen = now;
        }
      }
      const met = !step || ended || (seen !== undefined && step !== undefined && seen.attempt > step.attempt);
      if (heldLongEnough && met) break;
      await sleep(500);
    }
    await disk.free();
    const freedAt = Date.now();
    record.backMs = freedAt - at;
    if (!step || ended || seen === undefined || seen.attempt === step.attempt) {
      record.recoveryMs = record.backMs;
      if (step && !ended && seen?.attempt === step.attempt)
        record.notes.push('the step did not meet the full disk in time');
      return 'done';
    }
    const retry = seen; // the attempt after the one that failed: scheduled, waiting out its backoff
    ctx.monitor(
      (async () => {
        const deadline = ctx.watchUntil(at);
        while (Date.now() < deadline()) {
          const now = await stepNow(retry);
          if (now === undefined || (now !== 'unknown' && now.started && now.attempt >= retry.attempt)) {
            record.recoveryMs = Date.now() - at;
            return;
          }
          await sleep(500);
        }
        record.notes.push('the step the full disk failed did not run again in time');
      })(),
    );
    return 'done';
  };
}
