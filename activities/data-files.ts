import { statSync } from 'node:fs';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { REPO_ROOT } from '../deploy/paths.js';
import { loadEnvironment } from '../schemas/environment.js';
import { boundedText } from '../schemas/spec-error.js';

/**
 * Where the worker finds the data files a spec names (personas, question sets, template
 * overrides).
 *
 * `mockworld start` makes every path absolute against the spec file's folder before the run
 * starts, so those runs never get here with a relative path. A spec started any other way (the
 * Temporal UI's Start Workflow form, a client of your own) reaches the worker as it was written,
 * with no folder to be relative to; its relative paths are looked up, in order, in
 *
 * 1. the worker's data directory: `MOCKWORLD_DATA_DIR`, else the worker's working directory;
 * 2. the `examples/` folder shipped with mockworld, so the examples work pasted as they are.
 *
 * An absolute path is used as it is.
 */
export interface DataFileSearch {
  /** Looked in first. */
  readonly dataDir: string;
  /** Looked in second: mockworld's own examples/. */
  readonly examplesDir: string;
}

/** The examples folder of the package this code runs from (a checkout or node_modules/mockworld). */
export const SHIPPED_EXAMPLES_DIR = path.join(REPO_ROOT, 'examples');

/** This worker's search: its data directory from the environment, then the shipped examples. */
export function workerDataFileSearch(): DataFileSearch {
  return {
    dataDir: path.resolve(loadEnvironment().MOCKWORLD_DATA_DIR ?? process.cwd()),
    examplesDir: SHIPPED_EXAMPLES_DIR,
  };
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

/**
 * The file a spec's `file` names; `what` says what it holds, for the error. An absolute path is
 * returned as it is (reading it reports a missing file); a relative one is the first regular file
 * found in the search's places, else a {@link DATA_FILE_NOT_FOUND} failure listing each place
 * tried and the ways to fix it.
 */
export function resolveDataFile(
  file: string,
  what: string,
  search: DataFileSearch = workerDataFileSearch(),
): string {
  if (path.isAbsolute(file)) return file;
  const tried = [search.dataDir, search.examplesDir].map((dir) => path.resolve(dir, file));
  const found = tried.find(isFile);
  if (found) return found;
  throw notFound(what, file, tried, search);
}
