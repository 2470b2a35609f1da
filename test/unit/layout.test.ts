import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';

/**
 * The layout is the architecture (ARCHITECTURE.md "Who may import what"): each product folder
 * imports only the parts below it, and no product code imports tests, benchmarks or testkit.
 */
const MAY_IMPORT: Record<string, readonly string[]> = {
  schemas: [],
  workflows: ['schemas', 'activities'], // activities: types and the pure planning modules below
  activities: ['schemas', 'deploy'], // deploy: paths only
  services: ['schemas', 'activities', 'deploy'],
  workers: ['schemas', 'activities', 'services', 'deploy'],
  client: ['schemas', 'workflows', 'services'],
  deploy: ['schemas', 'workflows', 'activities'],
  cli: ['schemas', 'workflows', 'activities', 'services', 'workers', 'client', 'deploy'],
};

/** Modules of activities/ that workflow code may run: pure functions, no I/O (bundled into workflows). */
const PURE_FOR_WORKFLOWS = new Set([
  'activities/study/grid.ts',
  'activities/synthesis/task-id.ts',
  // The error classes, whose types the retry policies list (workflows/activity-options.ts).
  'activities/errors.ts',
  'activities/error-class.ts',
  'activities/llm/errors.ts',
  'activities/world/errors.ts',
  'activities/reward/errors.ts',
  'activities/synthesis/errors.ts',
  'activities/training/errors.ts',
  'activities/training/weight-sync-errors.ts',
  'activities/study/errors.ts',
  'activities/templates/errors.ts',
  'activities/store/errors.ts',
  'activities/sandbox/errors.ts',
  'activities/search/errors.ts',
  'activities/correctness/errors.ts',
  'activities/evaluation/errors.ts',
  'activities/export/errors.ts',
]);

/** Product files may exceed this only with a reason at their top. */
const MAX_LINES = 400;

function sources(folder: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (/\.(ts|py)$/.test(name) && !name.endsWith('.d.ts')) out.push(path.relative(REPO_ROOT, full));
    }
  };
  walk(path.join(REPO_ROOT, folder));
  return out;
}

interface Import {
  readonly file: string;
  readonly target: string;
  readonly typeOnly: boolean;
}

function relativeImports(file: string): Import[] {
  const text = readFileSync(path.join(REPO_ROOT, file), 'utf8');
  const found: Import[] = [];
  for (const match of text.matchAll(
    /(import|export)(\s+type)?[^'";]*?from\s*'(\.{1,2}\/[^']+)'|import\(\s*(?:\/\*.*?\*\/\s*)?'(\.{1,2}\/[^']+)'\)/gs,
  )) {
    const specifier = match[3] ?? match[4]!;
    const target = path.normalize(path.join(path.dirname(file), specifier)).replace(/\.js$/, '.ts');
    found.push({ file, target, typeOnly: Boolean(match[2]) });
  }
  return found;
}

const PRODUCT = Object.keys(MAY_IMPORT);
const tsSources = (folder: string) => sources(folder).filter((file) => file.endsWith('.ts'));

describe('the layout', () => {
  it.each(PRODUCT)('%s/ imports only the parts it may', (folder) => {
    const wrong = tsSources(folder)
      .flatMap(relativeImports)
      .filter(({ target }) => {
        const part = target.split(path.sep)[0]!;
        return part !== folder && !MAY_IMPORT[folder]!.includes(part);
      })
      .map(({ file, target }) => `${file} -> ${target}`);
    expect(wrong).toEqual([]);
  });

  it('workflow code imports from activities/ only types and pure modules', () => {
    const wrong = tsSources('workflows')
      .flatMap(relativeImports)
      .filter(
        ({ target, typeOnly }) =>
          target.startsWith('activities/') && !typeOnly && !PURE_FOR_WORKFLOWS.has(target),
      )
      .map(({ file, target }) => `${file} -> ${target}`);
    expect(wrong).toEqual([]);
  });

  it('the pure modules import only each other, and types', () => {
    const wrong = [...PURE_FOR_WORKFLOWS].flatMap((file) => {
      const text = readFileSync(path.join(REPO_ROOT, file), 'utf8');
      const packages = [...text.matchAll(/^import(?!\s+type)[^'";]*?from\s*'([^.][^']*)'/gms)].map(
        (m) => `${file} -> ${m[1]}`,
      );
      const modules = relativeImports(file)
        .filter(({ target, typeOnly }) => !typeOnly && !PURE_FOR_WORKFLOWS.has(target))
        .map(({ target }) => `${file} -> ${target}`);
      return [...packages, ...modules];
    });
    expect(wrong).toEqual([]);
  });

  it('product files stay under 400 lines or say at their top why not', () => {
    const long = [...PRODUCT.flatMap(sources), 'index.ts']
      .filter((file) => !file.includes(`${path.sep}tests${path.sep}`))
      .filter((file) => {
        const text = readFileSync(path.join(REPO_ROOT, file), 'utf8');
        const lines = text.split('\n').length;
        return lines > MAX_LINES && !/why this file is long/i.test(text.split('\n').slice(0, 15).join('\n'));
      });
    expect(long).toEqual([]);
  });

  it("ARCHITECTURE.md's import table states exactly these rules", () => {
    const text = readFileSync(path.join(REPO_ROOT, 'ARCHITECTURE.md'), 'utf8');
    const section = text.slice(text.indexOf('## Who may import what'), text.indexOf('## Versioning'));
    const rows = [...section.matchAll(/^\| `(\w+)\/` \|([^|]*)\|/gm)].map(([, folder, imports]) => [
      folder,
      [...imports!.matchAll(/`(\w+)\/`/g)].map(([, part]) => part).sort(),
    ]);
    const rules = Object.entries(MAY_IMPORT).map(([folder, parts]) => [folder, [...parts].sort()]);
    expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(rules));
  });

  it('every top-level part has a README saying what it owns', () => {
    const parts = [
      ...PRODUCT,
      'testkit',
      'test',
      'bench',
      'workers/trainer',
      'integrations',
      'integrations/verl',
      'examples',
      'docs',
      'bin',
    ];
    const missing = parts.filter((part) => {
      try {
        return !statSync(path.join(REPO_ROOT, part, 'README.md')).isFile();
      } catch {
        return true;
      }
    });
    expect(missing).toEqual([]);
  });
});
