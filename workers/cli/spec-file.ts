import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { SpecValidationError } from '../../schemas/spec-error';
import { parseSpec, type AnySpec } from '../../schemas/specs';

/** Largest spec document accepted; specs reference data by path, they never embed it. */
const MAX_SPEC_BYTES = 1024 * 1024;

/** Reads a YAML or JSON spec file and validates it; every bad field is named in the error. */
export async function readSpecFile(file: string): Promise<AnySpec> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new Error(`Cannot read spec file ${file}: ${(error as Error).message}`);
  }
  if (Buffer.byteLength(text) > MAX_SPEC_BYTES) {
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
 * Makes the file paths a spec names absolute, relative to the spec file, so the run reads the
 * same files whatever directory the worker runs in.
 */
function resolveSpecPaths(spec: AnySpec, baseDir: string): AnySpec {
  switch (spec.kind) {
    case 'Synthesis': {
      const overrides = Object.fromEntries(
        Object.entries(spec.templates.overrides).map(([stage, file]) => [stage, path.resolve(baseDir, file)]),
      );
      return {
        ...spec,
        personas: { ...spec.personas, path: path.resolve(baseDir, spec.personas.path) },
        templates: { ...spec.templates, overrides },
      };
    }
    case 'Smoke':
    case 'GrpoTraining':
      return spec;
    default: {
      const unknown: never = spec;
      throw new Error(`no path rules for spec kind ${(unknown as AnySpec).kind}`);
    }
  }
}
