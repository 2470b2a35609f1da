/**
 * node-llama-cpp, the embedded model's runtime, loaded on first use. It is not a dependency of
 * the mockworld package (its prebuilt llama.cpp binaries for every platform and GPU API weigh
 * about 700 MB, which a worker that calls a remote endpoint never needs): a project that installs
 * it has it resolved from its own node_modules; otherwise the pinned version is installed once
 * with npm into `$MOCKWORLD_HOME/runtime/` and imported from there.
 */
import { execFile } from 'node:child_process';
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { loadEnvironment } from '../../schemas/environment.js';

/** The runtime version the embedded model server is built and tested against. */
export const LLAMA_CPP_PIN = { name: 'node-llama-cpp', version: '3.21.1' } as const;

export type LlamaCpp = typeof import('node-llama-cpp');

/** The loaded runtime and the URL of its entry module (its other files lie beside it). */
export interface LoadedLlamaCpp {
  readonly module: LlamaCpp;
  readonly entryUrl: string;
}

let loading: Promise<LoadedLlamaCpp> | undefined;

/** The runtime, from the project's node_modules or else from `$MOCKWORLD_HOME/runtime/` (installed there once). */
export function loadLlamaCpp(
  log: (line: string) => void = (line) => console.error(line),
): Promise<LoadedLlamaCpp> {
  loading ??= locate(log).then(async (entryUrl) => ({
    module: (await import(entryUrl)) as LlamaCpp,
    entryUrl,
  }));
  return loading;
}

/**
 * Where the runtime's entry module is: the project's own copy, else the pinned one under
 * `$MOCKWORLD_HOME/runtime/`, installed first if missing (`stack up` calls it in the foreground,
 * so a first install is shown and not raced by the server's start-up deadline).
 */
export async function ensureLlamaCpp(log: (line: string) => void): Promise<string> {
  return locate(log);
}

async function locate(log: (line: string) => void): Promise<string> {
  const own = resolvedFromProject();
  if (own) return own;
  const dir = runtimeDir();
  const packageDir = path.join(dir, 'node_modules', LLAMA_CPP_PIN.name);
  if (!(await exists(path.join(packageDir, 'package.json')))) await install(dir, log);
  return pathToFileURL(path.join(packageDir, await entryOf(packageDir))).href;
}

/** Where the pinned runtime is installed when the project has none. */
export function runtimeDir(home = loadEnvironment().MOCKWORLD_HOME): string {
  return path.join(home, 'runtime', `${LLAMA_CPP_PIN.name}-${LLAMA_CPP_PIN.version}`);
}

function resolvedFromProject(): string | undefined {
  try {
    return import.meta.resolve(LLAMA_CPP_PIN.name);
  } catch {
    return undefined; // not installed beside mockworld
  }
}

async function install(dir: string, log: (line: string) => void): Promise<void> {
  const spec = `${LLAMA_CPP_PIN.name}@${LLAMA_CPP_PIN.version}`;
  log(`installing the embedded model's runtime (${spec}, about 700 MB, once) into ${dir}`);
  try {
    await promisify(execFile)(
      'npm',
      ['install', '--no-save', '--no-audit', '--no-fund', '--no-package-lock', '--prefix', dir, spec],
      { maxBuffer: 16 * 1024 * 1024 },
    );
  } catch (error) {
    throw new Error(
      `could not install ${spec} into ${dir} (${(error as Error).message.split('\n')[0]}); ` +
        `install it yourself (npm install ${spec} in your project) or point MOCKWORLD_MODEL_URL at a model server`,
    );
  }
}

/** The ESM entry file of an installed package, from its package.json `exports` or `main`. */
export async function entryOf(packageDir: string): Promise<string> {
  const manifest = JSON.parse(await readFile(path.join(packageDir, 'package.json'), 'utf8')) as {
    exports?: unknown;
    main?: string;
  };
  const root =
    typeof manifest.exports === 'object' && manifest.exports
      ? (manifest.exports as Record<string, unknown>)['.']
      : manifest.exports;
  const entry = pickImport(root) ?? manifest.main;
  if (!entry) throw new Error(`${packageDir}/package.json names no entry module`);
  return entry;
}

/** The `import` (else `default`) target of an `exports` entry. */
function pickImport(target: unknown): string | undefined {
  if (typeof target === 'string') return target;
  if (typeof target !== 'object' || target === null) return undefined;
  const conditions = target as Record<string, unknown>;
  return pickImport(conditions.import) ?? pickImport(conditions.node) ?? pickImport(conditions.default);
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}
