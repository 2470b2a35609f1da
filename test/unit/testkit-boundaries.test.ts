import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';

/**
 * The import rules of testkit/README.md and bench/README.md: tests and benchmarks share testkit/
 * and never import each other; benchmarks run without vitest, so they never import
 * testkit/vitest/; a benchmark script is never a library. A rule broken by one new import line
 * fails here, not in a reviewer's head. (That the product imports none of them is layout.test.ts.)
 */

/** Folders that are not source of this repository. */
const NOT_SOURCE = new Set(['node_modules', 'dist', '.git', '.venv', '.venv-trainer', '.mockworld']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (NOT_SOURCE.has(entry.name)) return [];
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.(ts|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** Static, dynamic and side-effect imports and re-exports with a literal relative specifier. */
const RELATIVE_IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g;

interface Edge {
  /** Repo-relative, forward slashes. */
  readonly from: string;
  readonly to: string;
}

function importEdges(): Edge[] {
  const rel = (file: string) => path.relative(REPO_ROOT, file).split(path.sep).join('/');
  return sourceFiles(REPO_ROOT).flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(RELATIVE_IMPORT)].map((m) => ({
      from: rel(file),
      to: rel(path.resolve(path.dirname(file), m[1]!)),
    })),
  );
}

const under = (folder: string) => (p: string) => p === folder || p.startsWith(`${folder}/`);
const inTest = under('test');
const inBench = under('bench');
const inTestkit = under('testkit');
const inVitestOnly = under('testkit/vitest');
const isTestOrBenchCode = (p: string) => inTest(p) || inBench(p) || inTestkit(p) || p === 'vitest.config.ts';

describe('testkit boundaries', () => {
  const edges = importEdges();
  const breaking = (rule: (e: Edge) => boolean) => edges.filter(rule).map((e) => `${e.from} imports ${e.to}`);

  it('sees the imports it judges (the scan is not empty)', () => {
    expect(edges).toContainEqual({
      from: 'test/integration/chaos.test.ts',
      to: 'testkit/chaos/harness.js',
    });
    expect(edges.some((e) => inBench(e.from) && inTestkit(e.to))).toBe(true);
  });

  it('no test imports a benchmark', () => {
    expect(breaking((e) => inTest(e.from) && inBench(e.to))).toEqual([]);
  });

  it('no benchmark imports a test, nor what needs a vitest run', () => {
    expect(breaking((e) => inBench(e.from) && (inTest(e.to) || inVitestOnly(e.to)))).toEqual([]);
  });

  it('no module imports a benchmark script (bench/<name>.ts is a script only)', () => {
    expect(breaking((e) => /^bench\/[^/]+\.js$/.test(e.to))).toEqual([]);
  });

  it('testkit imports neither tests nor benchmarks', () => {
    expect(breaking((e) => inTestkit(e.from) && (inTest(e.to) || inBench(e.to)))).toEqual([]);
  });
});
