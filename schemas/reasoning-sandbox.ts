import { z } from 'zod';

/**
 * The sandboxed `python` tool (activities/sandbox): its caps, a run's request and its result, and
 * the tool's call arguments. Reasoning tasks (seed §3.4) run the policy's code "in a real Python
 * environment"; each run gets these caps, and the worker kills it on any of them.
 */

const KiB = 1024;
const MiB = 1024 * KiB;

/**
 * Caps of one sandboxed run. Processes count threads too. `memoryMiB` is per process (an
 * address-space rlimit); `runMemoryMiB` and `runCpus` bound the whole run — every process and
 * the scratch tmpfs together — in a cgroup of its own where the worker can make one
 * (activities/sandbox/cgroup.ts); without one, a run can hold up to `processes × memoryMiB` plus
 * its scratch, which is why the defaults keep both small.
 */
export const SandboxCapsSchema = z
  .object({
    cpuSeconds: z
      .int()
      .min(1)
      .max(600)
      .default(10)
      .describe('CPU seconds per process (SIGXCPU, then SIGKILL).'),
    wallSeconds: z
      .int()
      .min(1)
      .max(900)
      .default(20)
      .describe('Wall-clock seconds of the whole run, startup included.'),
    memoryMiB: z.int().min(256).max(16_384).default(1_024).describe('Address space per process.'),
    runMemoryMiB: z
      .int()
      .min(64)
      .max(65_536)
      .default(1_024)
      .describe('Memory of the whole run: its processes and scratch together (cgroup memory limit).'),
    runCpus: z
      .number()
      .min(0.1)
      .max(64)
      .default(1)
      .describe('CPUs the whole run may use at once (cgroup CPU quota).'),
    processes: z.int().min(1).max(256).default(8).describe('Processes and threads of the sandbox uid.'),
    outputBytes: z
      .int()
      .min(KiB)
      .max(4 * MiB)
      .default(64 * KiB)
      .describe('stdout + stderr together; the run is killed past it.'),
    scratchMiB: z
      .int()
      .min(1)
      .max(1_024)
      .default(32)
      .describe('Size of the per-run scratch directory (tmpfs).'),
  })
  .strict();

/** Caps with every default applied. */
export type SandboxCaps = z.infer<typeof SandboxCapsSchema>;

/** Bytes of `text` in UTF-8 (TextEncoder: workflow code may parse these schemas, and has no Buffer). */
const utf8Bytes = (text: string) => new TextEncoder().encode(text).length;

/** The largest program and stdin a run accepts. */
export const MAX_CODE_BYTES = 256 * KiB;
export const MAX_STDIN_BYTES = 4 * MiB;

/** One run of a Python program in the sandbox. */
export const PythonRunRequestSchema = z
  .object({
    code: z.string().refine((code) => utf8Bytes(code) <= MAX_CODE_BYTES, {
      message: `must be at most ${MAX_CODE_BYTES} bytes`,
    }),
    stdin: z
      .string()
      .default('')
      .refine((stdin) => utf8Bytes(stdin) <= MAX_STDIN_BYTES, {
        message: `must be at most ${MAX_STDIN_BYTES} bytes`,
      }),
    caps: SandboxCapsSchema.prefault({}),
  })
  .strict();

export type PythonRunRequest = z.input<typeof PythonRunRequestSchema>;

/** The cap a run was killed on. */
export const SandboxCapSchema = z.enum(['cpu_time', 'wall_time', 'memory', 'output']);
export type SandboxCap = z.infer<typeof SandboxCapSchema>;

/**
 * How a run ended. `ok`: exit code 0. `error`: the program failed (an exception, a non-zero exit,
 * a signal, or a refusal of the sandbox such as a denied file or socket). `killed`: it hit a cap.
 */
export const PythonRunResultSchema = z.object({
  outcome: z.enum(['ok', 'error', 'killed']),
  /** The cap that ended it, when `killed`. */
  cap: SandboxCapSchema.nullable(),
  /** The program's exit code; null when a signal ended it. */
  exitCode: z.int().nullable(),
  /** The signal that ended it (e.g. `SIGXCPU`), if any. */
  signal: z.string().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  /** True when stdout + stderr were cut at the output cap. */
  truncated: z.boolean(),
  /** One line saying what happened, in words the policy can act on. */
  message: z.string(),
  durationMs: z.number().nonnegative(),
});

export type PythonRunResult = z.infer<typeof PythonRunResultSchema>;

/** The arguments the policy passes to the `python` tool. */
export const PythonToolArgsSchema = z.object({ code: z.string().min(1) }).strict();
