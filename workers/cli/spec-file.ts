import { readFile } from 'node:fs/promises';
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
      { path: '', message: `the document is larger than ${MAX_SPEC_BYTES} bytes; reference large data by path` },
    ]);
  }
  let document: unknown;
  try {
    document = /\.json$/i.test(file) ? JSON.parse(text) : parseYaml(text, { maxAliasCount: 100 });
  } catch (error) {
    throw new SpecValidationError('unknown', [{ path: '', message: `not valid YAML/JSON: ${(error as Error).message}` }]);
  }
  return parseSpec(document);
}
