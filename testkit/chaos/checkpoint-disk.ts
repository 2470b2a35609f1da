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
import { open, readdir, stat, unlink } from 'node:fs/promises';
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

/** When a step record (record.json) was last written under `root`; 0 when none. */
async function lastStepWritten(root: string): Promise<number> {
  let last = 0;
  for (const runDir of await readdir(root).catch(() => [] as string[])) {
    for (const step of await readdir(path.join(root, runDir)).catch(() => [] as string[])) {
      if (!step.startsWith('step-')) continue;
      const s = await stat(path.join(root, runDir, step, 'record.json')).catch(() => undefined);
      if (s) last = Math.max(last, s.mtimeMs);
    }
  }
  return last;
}

export interface DiskFullOptions {
  /**
   * How long the disk stays full at least, drawn uniformly from [min, max] ms; longer (up to
   * {@link MAX_HOLD_MS}) while the trainer step that was running has not yet met it (a step on a
   * busy machine can compute for longer than the hold before it saves).
   */
  readonly holdMs: readonly [number, number];
}

const MAX_HOLD_MS = 120_000;

/** A trainer step attempt: which activity, and its attempt number. */
export interface StepAttempt {
  readonly workflowId: string;
  readonly activityId: string;
  readonly attempt: number;
}

/**
 * The injector of fault (h). `runningStep` is the trainer step attempt running now, if any (the
 * fault waits up to a minute for one, so that its save meets the full disk); `stepAttempt` where
 * that step is now (undefined: finished); `pendingSteps` whether any trainer step is scheduled or
 * running (recovery needs one written only then).
 */
export function diskFullInjector(
  ctx: FaultContext,
  disk: SmallDisk,
  options: DiskFullOptions,
  runningStep: () => Promise<StepAttempt | undefined>,
  stepAttempt: (step: StepAttempt) => Promise<StepAttempt | undefined | 'unknown'>,
  pendingSteps: () => Promise<boolean | undefined>,
): Injector {
  return async (seq, random) => {
    const waitUntil = Date.now() + 60_000;
    let step = await runningStep();
    while (!step && Date.now() < waitUntil && !ctx.stopping()) {
      await sleep(250);
      step = await runningStep();
    }
    const hold = options.holdMs[0] + random() * (options.holdMs[1] - options.holdMs[0]);
    const at = Date.now();
    const bytes = await disk.fill();
    const record: FaultRecord = {
      kind: 'checkpoint-disk-full',
      seq,
      atS: ctx.seconds(at),
      detail: `checkpoint tmpfs filled (${(bytes / 2 ** 20).toFixed(1)} MiB) for at least ${(hold / 1000).toFixed(0)} s${step ? `, trainer step attempt ${step.attempt} of ${step.workflowId} running` : ''}`,
      runsInProgress: ctx.runsInProgress(),
      notes: [],
    };
    ctx.record(record);
    ctx.log(`fault (h) #${seq}: ${record.detail}`);
    await sleep(Math.max(0, at + hold - Date.now()));
    // Until the step that was running has met the full disk: failed (a later attempt) or ended.
    while (step && Date.now() - at < MAX_HOLD_MS && !ctx.stopping()) {
      const now = await stepAttempt(step);
      if (now === undefined || (now !== 'unknown' && now.attempt > step.attempt)) break;
      await sleep(500);
    }
    await disk.free();
    const freedAt = Date.now();
    record.backMs = freedAt - at;
    ctx.monitor(
      (async () => {
        const deadline = ctx.watchUntil(at);
        for (;;) {
          const written = await lastStepWritten(disk.dir);
          if (written >= freedAt) {
            record.recoveryMs = Math.round(written) - at;
            return;
          }
          if (Date.now() > deadline()) {
            if ((await pendingSteps()) === false) {
              record.recoveryMs = freedAt - at;
              record.notes.push('no trainer step due after the space was freed: recovered = freed');
            } else record.notes.push('no trainer step written after the space was freed, in time');
            return;
          }
          await sleep(500);
        }
      })(),
    );
    return 'done';
  };
}
