import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';

/**
 * Short functions in product code: a function, method or arrow function whose body spans more than
 * MAX_BODY_LINES lines is split into named helpers, or listed in ALLOWED with the reason it stays.
 */
const MAX_BODY_LINES = 80;

/** Product code: these folders (recursively) and these top-level files; never tests, testkit, bench, dist. */
const PRODUCT_FOLDERS = [
  'activities',
  'workflows',
  'schemas',
  'client',
  'services',
  'workers',
  'deploy',
  'cli',
];
const PRODUCT_FILES = ['index.ts'];
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'test', 'testkit', 'bench']);

/**
 * Long functions that stay long, keyed `file:name` (no line number, so edits above do not break
 * it), each with why. An entry whose function is no longer long fails the test: remove it.
 */
const ALLOWED: Record<string, string> = {
  // Declarative documents: the literal reads as the output it produces, top to bottom.
  'activities/charts/study-charts.ts:curveChartSpec': 'one Vega-Lite spec literal (layers, scales, legend)',
  'activities/charts/training-charts.ts:rewardChartSpec':
    'one Vega-Lite spec literal (layers, scales, legend)',
  'activities/export/dataset-card.ts:renderDatasetCard':
    'dataset card template: YAML header and markdown in document order',
  'services/viewer/synthesis-pages.ts:taskPage': 'HTML template of the task page, its sections in page order',
  // Tables: one entry per case, each short.
  'activities/sandbox/bwrap-args.ts:bwrapArgs':
    'the sandbox argv in bubblewrap order, reviewed as one security policy',
  'services/viewer/app.ts:createViewerApp':
    "Hono route table: the viewer's URLs and their short handlers in one place",
  'activities/study/index.ts:createStudyActivities':
    'activity registry: an object of short, documented activity methods',
  'activities/synthesis/index.ts:createSynthesisActivities':
    'activity registry: an object of short, documented activity methods',
  'activities/training/index.ts:createTrainingActivities':
    'activity registry: an object of short, documented activity methods',
};

/** One function whose body is longer than the limit. */
interface LongFunction {
  readonly file: string;
  readonly line: number;
  readonly name: string;
  readonly lines: number;
}

/** Every product .ts file (not .d.ts), relative to the repository root. */
function productFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) {
        if (!SKIPPED_DIRS.has(name)) walk(full);
      } else if (/\.(ts|mts|cts|tsx)$/.test(name) && !/\.d\.[mc]?ts$/.test(name)) {
        out.push(path.relative(REPO_ROOT, full));
      }
    }
  };
  for (const folder of PRODUCT_FOLDERS) walk(path.join(REPO_ROOT, folder));
  return [...out, ...PRODUCT_FILES].sort();
}

/** A readable name for a function node: its own, or the variable, property or class member it is assigned to. */
function functionName(node: ts.FunctionLikeDeclaration, source: ts.SourceFile): string {
  const text = (name: ts.Node | undefined) => (name ? name.getText(source) : undefined);
  const own = text(node.name);
  const parent = node.parent;
  const assigned =
    ts.isVariableDeclaration(parent) ||
    ts.isPropertyAssignment(parent) ||
    ts.isPropertyDeclaration(parent) ||
    ts.isBindingElement(parent)
      ? text(parent.name)
      : ts.isBinaryExpression(parent) && parent.operatorToken.kind === ts.SyntaxKind.EqualsToken
        ? text(parent.left)
        : undefined;
  const base = own ?? assigned ?? '<anonymous>';
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const owner = node.parent && ts.isClassLike(node.parent) ? node.parent.name?.getText(source) : undefined;
  return owner ? `${owner}.${base}` : base;
}

/** The long functions of one file (nested ones too, each measured on its own). */
function longFunctions(file: string): LongFunction[] {
  const source = ts.createSourceFile(
    file,
    readFileSync(path.join(REPO_ROOT, file), 'utf8'),
    ts.ScriptTarget.Latest,
    true,
    ts.ScriptKind.TS,
  );
  const found: LongFunction[] = [];
  const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line + 1;
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const fn = node as ts.FunctionLikeDeclaration;
      const body = fn.body!;
      const lines = lineOf(body.getEnd()) - lineOf(body.getStart(source)) + 1;
      if (lines > MAX_BODY_LINES) {
        found.push({ file, line: lineOf(fn.getStart(source)), name: functionName(fn, source), lines });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('function length in product code', () => {
  const all = productFiles().flatMap(longFunctions);
  const key = (f: LongFunction) => `${f.file}:${f.name}`;

  it('scans the product folders', () => {
    expect(productFiles()).toContain('workflows/grpo-training.ts');
    expect(productFiles().some((file) => file.startsWith('test/'))).toBe(false);
  });

  it(`has no function body over ${MAX_BODY_LINES} lines outside the allowlist`, () => {
    const unexplained = all
      .filter((f) => !(key(f) in ALLOWED))
      .map((f) => `${f.file}:${f.line} ${f.name} ${f.lines} lines`);
    expect(unexplained, 'split these into named helpers, or allowlist them with a reason').toEqual([]);
  });

  it('allows only functions that are still long, each with a reason', () => {
    const longKeys = new Set(all.map(key));
    expect(Object.keys(ALLOWED).filter((k) => !longKeys.has(k))).toEqual([]);
    const reasons = Object.entries(ALLOWED);
    expect(reasons.filter(([, reason]) => reason.trim().length < 10)).toEqual([]);
  });
});
