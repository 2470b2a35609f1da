import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';

/**
 * The rules of schemas/README.md: every zod schema of the product lives in schemas/, and schemas/
 * is the bottom layer (zod and its own files only; workflows import it, so it must stay free of
 * I/O). A schema declared in an activity, or a schema file reaching into activities/, fails here.
 */

/** The product's folders besides schemas/ (test/, bench/ and testkit/ may build ad-hoc schemas). */
const PRODUCT = ['activities', 'services', 'workers', 'cli', 'client', 'deploy', 'workflows'];

function tsFiles(dir: string): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return []; // a folder this checkout does not have
  }
  return entries.flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) return [];
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(full);
    return /\.(ts|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

const rel = (file: string) => path.relative(REPO_ROOT, file).split(path.sep).join('/');

/** A zod constructor call: what declaring a schema takes (using one, `z.infer`, `z.ZodError`, does not). */
const SCHEMA_CALL =
  /\bz\s*\.\s*(?:object|strictObject|looseObject|enum|union|discriminatedUnion|array|tuple|record|partialRecord|literal|string|number|int|boolean|null|unknown)\s*\(/;

/** Import and re-export specifiers, static and dynamic. */
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g;

/** The code of a file without its comments (a doc comment may show an import or a schema). */
const codeOf = (file: string) =>
  readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');

/**
 * The files of schemas/ that run in a process, never in a workflow, and so may use Node built-ins:
 * environment.ts (reads the process environment; its defaults need the home directory) and the
 * scripts that write the JSON Schema for Python (`emit-*.ts`).
 */
const mayUseNode = (file: string) => /^(environment|emit-[^/]*)\.ts$/.test(path.basename(file));

describe('schemas/ layer', () => {
  const schemaFiles = tsFiles(path.join(REPO_ROOT, 'schemas'));

  it('sees the files it judges (the scans are not empty)', () => {
    expect(schemaFiles.map(rel)).toContain('schemas/episode-input.ts');
    expect(PRODUCT.flatMap((dir) => tsFiles(path.join(REPO_ROOT, dir))).map(rel)).toContain(
      'activities/world/episode-runner.ts',
    );
  });

  it('no product file outside schemas/ declares a zod schema', () => {
    const declaring = PRODUCT.flatMap((dir) => tsFiles(path.join(REPO_ROOT, dir)))
      .filter((file) => SCHEMA_CALL.test(codeOf(file)))
      .map(rel);
    expect(declaring).toEqual([]);
  });

  it('schemas/ imports only zod and its own files (Node built-ins where it runs in a process)', () => {
    const breaking = schemaFiles.flatMap((file) =>
      [...codeOf(file).matchAll(SPECIFIER)]
        .map((m) => m[1]!)
        .filter((spec) => {
          if (spec.startsWith('.'))
            return !rel(path.resolve(path.dirname(file), spec)).startsWith('schemas/');
          if (spec === 'zod') return false;
          return !(mayUseNode(file) && spec.startsWith('node:'));
        })
        .map((spec) => `${rel(file)} imports ${spec}`),
    );
    expect(breaking).toEqual([]);
  });
});
