import { constants as fsConstants, realpathSync, statSync } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { REPO_ROOT } from '../deploy/paths.js';
import { loadEnvironment } from '../schemas/environment.js';
import { boundedText } from '../schemas/spec-error.js';
import type { SpecFile } from '../schemas/spec-files.js';

/**
 * Where the worker finds the data files a spec names (personas, question sets, template
 * overrides), and where it lets them be.
 *
 * `mockworld start` makes every path absolute against the spec file's folder before the run
 * starts, so those runs never get here with a relative path. A spec started any other way (the
 * Temporal UI's Start Workflow form, a client of your own) reaches the worker as it was written,
 * with no folder to be relative to; its relative paths are looked up, in order, in
 *
 * 1. the worker's data directory: `MOCKWORLD_DATA_DIR`, else the worker's working directory;
 * 2. the `examples/` folder shipped with mockworld, so the examples work pasted as they are.
 *
 * Whatever the path, the file must lie inside the worker's data roots: those two folders and the
 * folders of `MOCKWORLD_DATA_ROOTS` (symbolic links followed). Whoever may start a workflow — from
 * the UI, with no notion of file permissions — could otherwise have the worker read any file it
 * can (`/etc/…`, another user's keys) into prompts and rows. A data directory that is the file
 * system root is no root.
 */
export interface DataFileSearch {
  /** Looked in first. */
  readonly dataDir: string;
  /** Looked in second: mockworld's own examples/. */
  readonly examplesDir: string;
  /** Further folders a spec's files may lie in (`MOCKWORLD_DATA_ROOTS`). */
  readonly roots: readonly string[];
}

/** The examples folder of the package this code runs from (a checkout or node_modules/mockworld). */
export const SHIPPED_EXAMPLES_DIR = path.join(REPO_ROOT, 'examples');

/** This worker's search: its data directory from the environment, then the shipped examples. */
export function workerDataFileSearch(): DataFileSearch {
  return {
    dataDir: path.resolve(loadEnvironment().MOCKWORLD_DATA_DIR ?? process.cwd()),
    examplesDir: SHIPPED_EXAMPLES_DIR,
    roots: loadEnvironment().MOCKWORLD_DATA_ROOTS,
  };
}

/** The folders a spec's files may lie in, as configured (not yet resolved through links). */
export function dataRoots(search: DataFileSearch): string[] {
  const dataDir = path.resolve(search.dataDir);
  return [
    ...(dataDir === path.parse(dataDir).root ? [] : [dataDir]),
    path.resolve(search.examplesDir),
    ...search.roots.map((root) => path.resolve(root)),
  ];
}

/** Whether `file` is `root` or lies below it (both absolute and normalized). */
function within(root: string, file: string): boolean {
  const relative = path.relative(root, file);
  return !path.isAbsolute(relative) && relative.split(path.sep)[0] !== '..';
}

function realFolder(folder: string): string {
  try {
    return realpathSync(folder);
  } catch {
    return folder; // a root that does not exist holds no file either way
  }
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false; // missing, unreadable folder, or a name the file system refuses (too long)
  }
}

/**
 * Temporal failure type of a relative data path found in none of the places. The failure is
 * marked non-retryable itself, so no retry policy has to list it: every attempt would look in the
 * same places again.
 */
export const DATA_FILE_NOT_FOUND = 'DataFileNotFoundError';

function notFound(what: string, file: string, tried: readonly string[], search: DataFileSearch) {
  const shown = tried.map((t) => boundedText(t));
  return ApplicationFailure.create({
    type: DATA_FILE_NOT_FOUND,
    nonRetryable: true,
    message:
      `Cannot find the ${what} file ${JSON.stringify(boundedText(file))}. A relative path in a spec ` +
      "started without the CLI (from the Temporal UI or a client) is looked up in the worker's data " +
      `directory, then in mockworld's examples; tried ${shown.join(', ')}. Fix: put the file in the ` +
      'data directory (MOCKWORLD_DATA_DIR on the workers, else their working directory; now ' +
      `${boundedText(search.dataDir)}), give an absolute path that every worker can read, or start ` +
      'the spec with `mockworld start <spec file>`, which resolves paths against the spec file.',
    details: [{ what, file: boundedText(file), tried: shown }],
  });
}

/** Temporal failure type of a data path outside the worker's data roots (non-retryable). */
export const DATA_FILE_OUTSIDE_ROOTS = 'DataFileOutsideRootsError';

function outsideRoots(what: string, file: string, roots: readonly string[]) {
  const shown = roots.map((root) => boundedText(root));
  return ApplicationFailure.create({
    type: DATA_FILE_OUTSIDE_ROOTS,
    nonRetryable: true,
    message:
      `The ${what} file ${JSON.stringify(boundedText(file))} lies outside this worker's data roots ` +
      `(${shown.join(', ')}); nothing was read. Fix: move the file into one of them, or add its ` +
      `folder to MOCKWORLD_DATA_ROOTS ("${path.delimiter}"-separated) on every worker.`,
    details: [{ what, file: boundedText(file), roots: shown }],
  });
}

/**
 * The file a spec's `file` names; `what` says what it holds, for the errors. A relative path is
 * the first regular file found in the search's places, else a {@link DATA_FILE_NOT_FOUND} failure
 * listing each place tried and the ways to fix it. The file must lie inside the data roots: the
 * path as written is checked before the file system is asked anything about it (no existence
 * probe outside), and the real path, links followed, after; outside, a
 * {@link DATA_FILE_OUTSIDE_ROOTS} failure. An absolute path that does not exist is returned as it
 * is (reading it reports the missing file).
 */
export function resolveDataFile(
  file: string,
  what: string,
  search: DataFileSearch = workerDataFileSearch(),
): string {
  const roots = dataRoots(search);
  const inRoots = (candidate: string) => roots.some((root) => within(root, candidate));
  let candidate = path.resolve(file);
  if (!path.isAbsolute(file)) {
    const places = [search.dataDir, search.examplesDir].map((dir) => path.resolve(dir, file));
    const tried = places.filter(inRoots);
    if (tried.length === 0) throw outsideRoots(what, file, roots);
    const found = tried.find(isFile);
    if (!found) throw notFound(what, file, tried, search);
    candidate = found;
  }
  if (!inRoots(candidate)) throw outsideRoots(what, file, roots);
  let real: string;
  try {
    real = realpathSync(candidate);
  } catch {
    return candidate;
  }
  if (!roots.some((root) => within(realFolder(root), real))) throw outsideRoots(what, file, roots);
  return real;
}

/** Temporal failure type of a spec whose files the worker cannot read (non-retryable). */
export const SPEC_FILE_ERROR = 'SpecFileError';

/**
 * Checks, before a run starts, that every file its spec names is a regular file this worker can
 * read, found as {@link resolveDataFile} finds it. All problems are reported at once, each by the
 * field that names the file; nothing is read.
 */
export async function checkSpecFiles(
  files: readonly SpecFile[],
  search: DataFileSearch = workerDataFileSearch(),
): Promise<void> {
  const problems: string[] = [];
  for (const { field, path: file } of files) {
    let resolved: string;
    try {
      resolved = resolveDataFile(file, field, search);
    } catch (error) {
      problems.push(`${field}: ${(error as Error).message}`);
      continue;
    }
    try {
      await access(resolved, fsConstants.R_OK);
      if (!(await stat(resolved)).isFile())
        problems.push(`${field}: ${boundedText(resolved)} is not a regular file`);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
      problems.push(`${field}: cannot read ${JSON.stringify(boundedText(resolved))} (${code})`);
    }
  }
  if (problems.length === 0) return;
  throw ApplicationFailure.create({
    type: SPEC_FILE_ERROR,
    nonRetryable: true,
    message: `The spec names files this worker cannot read; nothing was started. ${problems.join(' | ')}`,
    details: [problems],
  });
}
