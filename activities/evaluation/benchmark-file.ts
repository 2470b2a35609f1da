/**
 * A math or search benchmark file (schemas/reasoning-evaluation.ts): read whole and checked whole.
 * A benchmark is a fixed set of problems whose scores are compared with published ones, so a bad
 * line refuses the file (naming every bad line) instead of quietly dropping a problem.
 */
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { BenchmarkProblemSchema } from '../../schemas/reasoning-evaluation.js';
import { resolveDataFile } from '../data-files.js';
import type { ListTasksResult } from '../../schemas/evaluation-contract.js';
import { BenchmarkFileError } from './errors.js';
import { packageVersions, selectTasks } from './trial-store.js';

/** Largest benchmark file read (the seed's sets are a few hundred problems). */
const MAX_FILE_BYTES = 64 * 1024 * 1024;

/** One problem of a benchmark file. */
export interface BenchmarkProblem {
  readonly id: string;
  readonly question: string;
  readonly answer: string;
  readonly aliases: readonly string[];
}

/** A benchmark file's problems in file order, and the sha256 of its bytes (the data version). */
export interface BenchmarkFile {
  readonly path: string;
  readonly sha256: string;
  readonly problems: readonly BenchmarkProblem[];
}

/** A benchmark file that cannot be used; not retryable (the file must change). */
function refuse(file: string, detail: string): BenchmarkFileError {
  return new BenchmarkFileError(`benchmark file ${file}`, detail);
}

/** Reads and checks a benchmark file; relative paths resolve as the spec's other data files. */
export async function readBenchmarkFile(file: string): Promise<BenchmarkFile> {
  const resolved = resolveDataFile(file, 'benchmark file');
  const size = (await stat(resolved).catch(() => null))?.size;
  if (size === undefined) throw refuse(resolved, 'cannot be read');
  if (size > MAX_FILE_BYTES) throw refuse(resolved, `is larger than ${MAX_FILE_BYTES} bytes`);
  const bytes = await readFile(resolved);
  const problems: BenchmarkProblem[] = [];
  const bad: string[] = [];
  const seen = new Map<string, number>();
  bytes
    .toString('utf8')
    .split('\n')
    .forEach((text, index) => {
      const line = index + 1;
      if (text.trim() === '') return;
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        bad.push(`line ${line}: not JSON`);
        return;
      }
      const parsed = BenchmarkProblemSchema.safeParse(value);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        bad.push(`line ${line}: ${issue.path.join('.') || 'line'}: ${issue.message}`);
        return;
      }
      const id = parsed.data.id ?? `line-${line}`;
      const first = seen.get(id);
      if (first !== undefined) {
        bad.push(`line ${line}: id ${JSON.stringify(id)} repeats line ${first}`);
        return;
      }
      seen.set(id, line);
      problems.push({
        id,
        question: parsed.data.question,
        answer: parsed.data.answer,
        aliases: parsed.data.aliases,
      });
    });
  if (bad.length > 0) {
    const shown = bad.slice(0, 20).join('; ');
    throw refuse(resolved, `${bad.length} bad line(s): ${shown}${bad.length > 20 ? '; ...' : ''}`);
  }
  if (problems.length === 0) throw refuse(resolved, 'has no problem');
  return { path: resolved, sha256: createHash('sha256').update(bytes).digest('hex'), problems };
}

/** The data version of a benchmark file in a trial's hash: its name and sha256. */
export const dataVersion = (file: BenchmarkFile) => ({ [path.basename(file.path)]: file.sha256 });

/** The problems of a file benchmark's group, in file order (`taskIds` picks some, `limit` the first). */
export async function listFileBenchmarkTasks(input: {
  readonly benchmark: string;
  readonly group: string;
  readonly path: string;
  readonly taskIds?: readonly string[];
  readonly limit?: number;
}): Promise<ListTasksResult> {
  const file = await readBenchmarkFile(input.path);
  const ids = selectTasks(
    file.problems.map((problem) => problem.id),
    input,
    (absent) =>
      new BenchmarkFileError(
        `${input.benchmark} ${input.group}`,
        `has no problem ${absent
          .slice(0, 10)
          .map((id) => JSON.stringify(id))
          .join(', ')}`,
      ),
  );
  return { taskIds: ids, packages: packageVersions(), data: dataVersion(file) };
}
