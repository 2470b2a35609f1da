import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/**
 * Whether this code runs compiled (`dist/`, an installed package) rather than from the
 * TypeScript sources of a checkout (through tsx).
 */
export const RUNS_COMPILED = import.meta.url.endsWith('.js');

/** Root of the mockworld package (where package.json lives): a checkout or node_modules/mockworld. */
export const REPO_ROOT = findPackageRoot(HERE);

/** Root of the code that runs: `dist/` when compiled, the package root in a checkout. */
export const CODE_ROOT = path.resolve(HERE, '..');

/** Project-local Python venv that holds the pinned Temporal CLI (and nothing else). */
export const TOOLS_VENV = path.join(REPO_ROOT, '.venv');

/** tsx's loader by absolute path: `--import tsx` would resolve from the caller's working directory. */
const TSX_LOADER = path.join(REPO_ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs');

/**
 * Node arguments that run one of mockworld's own entry modules in a new process, e.g.
 * `nodeEntryArgs('services/embedded-model/server')`: the compiled module when this code is
 * compiled, else the TypeScript source with tsx loaded into that same process (no launcher child,
 * so the PID a supervisor holds is the one doing the work).
 */
export function nodeEntryArgs(entry: string): string[] {
  if (RUNS_COMPILED) return [path.join(CODE_ROOT, `${entry}.js`)];
  return ['--import', TSX_LOADER, path.join(CODE_ROOT, `${entry}.ts`)];
}

function findPackageRoot(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${start}`);
  }
}

/**
 * How a person runs this CLI, for the commands its hints print: `./bin/mockworld` from a
 * checkout's sources, `npx mockworld` where the package is installed (compiled).
 */
export const CLI_INVOCATION = RUNS_COMPILED ? 'npx mockworld' : './bin/mockworld';
