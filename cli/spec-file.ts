import { open } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { SpecValidationError } from '../schemas/spec-error.js';
import { parseSpec, type AnySpec } from '../schemas/specs.js';

/** Largest spec document accepted; specs reference data by path, they never embed it. */
const MAX_SPEC_BYTES = 1024 * 1024;

/** Reads a YAML or JSON spec file and validates it; every bad field is named in the error. */
export async function readSpecFile(file: string): Promise<AnySpec> {
  let bytes: Buffer;
  try {
    bytes = await readAtMost(file, MAX_SPEC_BYTES + 1);
  } catch (error) {
    throw new Error(`Cannot read spec file ${file}: ${(error as Error).message}`);
  }
  const text = bytes.toString('utf8');
  if (bytes.length > MAX_SPEC_BYTES) {
    throw new SpecValidationError('unknown', [
      {
        path: '',
        message: `the document is larger than ${MAX_SPEC_BYTES} bytes; reference large data by path`,
      },
    ]);
  }
  let document: unknown;
  try {
    document = /\.json$/i.test(file) ? JSON.parse(text) : parseYaml(text, { maxAliasCount: 100 });
  } catch (error) {
    throw new SpecValidationError('unknown', [
      { path: '', message: `not valid YAML/JSON: ${(error as Error).message}` },
    ]);
  }
  return resolveSpecPaths(parseSpec(document), path.dirname(path.resolve(file)));
}

/**
 * The first `limit` bytes of a file, read without trusting its size: a device or a pipe given as
 * the spec (`/dev/zero`) ends the read at the limit instead of filling memory.
 */
async function readAtMost(file: string, limit: number): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(limit);
    let filled = 0;
    while (filled < limit) {
      const { bytesRead } = await handle.read(buffer, filled, limit - filled, null);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return buffer.subarray(0, filled);
  } finally {
    await handle.close();
  }
}

/**
 * Makes the file paths a spec names absolute, relative to the spec file, so the run reads the
 * same files whatever directory the worker runs in.
 */
function resolveSpecPaths(spec: AnySpec, baseDir: string): AnySpec {
  const templates = <T extends { overrides: Record<string, string | undefined> }>(choice: T): T => ({
    ...choice,
    overrides: Object.fromEntries(
      Object.entries(choice.overrides).map(([stage, file]) => [stage, file && path.resolve(baseDir, file)]),
    ),
  });
  switch (spec.kind) {
    case 'Synthesis':
      return {
        ...spec,
        personas: { ...spec.personas, path: path.resolve(baseDir, spec.personas.path) },
        ...(spec.reasoning && {
          reasoning: {
            ...spec.reasoning,
            seeds: { ...spec.reasoning.seeds, path: path.resolve(baseDir, spec.reasoning.seeds.path) },
          },
        }),
        templates: templates(spec.templates),
      };
    case 'ScalingStudy': {
      const resolve = (file: string) => path.resolve(baseDir, file);
      return {
        ...spec,
        questions: { seedPool: resolve(spec.questions.seedPool), testSet: resolve(spec.questions.testSet) },
        personas: spec.personas && resolve(spec.personas),
      };
    }
    case 'GrpoTraining':
      return {
        ...spec,
        templates: templates(spec.templates),
        ...(spec.benchmarks ? { benchmarks: benchmarkFiles(spec.benchmarks, baseDir) } : {}),
      };
    case 'Evaluation':
      return { ...spec, benchmarks: benchmarkFiles(spec.benchmarks, baseDir) };
    case 'Smoke':
    case 'JudgeAudit':
    case 'SftTraining':
      return spec;
    default: {
      const unknown: never = spec;
      throw new Error(`no path rules for spec kind ${(unknown as AnySpec).kind}`);
    }
  }
}

/** The math and search benchmarks' data sets (an Evaluation's, or a GrpoTraining's benchmarks) made absolute. */
function benchmarkFiles<B extends { math?: Datasets; search?: Datasets }>(benchmarks: B, baseDir: string): B {
  const files = <T extends Datasets>(b: T): T => ({
    ...b,
    datasets: b.datasets.map((d) => ({ ...d, path: path.resolve(baseDir, d.path) })),
  });
  return {
    ...benchmarks,
    ...(benchmarks.math ? { math: files(benchmarks.math) } : {}),
    ...(benchmarks.search ? { search: files(benchmarks.search) } : {}),
  };
}

interface Datasets {
  readonly datasets: ReadonlyArray<{ readonly name: string; readonly path: string }>;
}
