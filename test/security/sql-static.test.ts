import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';

/**
 * A static check that SQL in activities/ is parameterized: every `${...}` spliced into an SQL
 * text (a template passed to `.query(...)`, the `text` of a query config, or any template or
 * `+` concatenation whose literal parts hold SQL keywords) must be provably constant:
 *
 * - a literal, or a template / `+` of constants;
 * - a `const` whose initializer is constant (e.g. `const COLUMNS = 'a, b'`);
 * - a parameter of a function of the same file whose every call passes a constant there
 *   (e.g. `summary('e.turns')`, `firstR('correct')`);
 * - a call of a function of the same file with constant arguments.
 *
 * What is left must be in ALLOWED with the reason it is safe. Values always go as $n parameters.
 */

/** Interpolations that are not constant but safe, and why. Each must still exist (no stale entries). */
const ALLOWED: ReadonlyArray<{ file: string; expression: string; why: string }> = [
  {
    file: 'activities/synthesis/stage-common.ts',
    expression: "assignments.map((a) => `, ${a}`).join('')",
    why:
      'column names of the UPDATE: keys of object literals written in stages.ts and rubric-stage.ts, checked against ' +
      '^[a-z_]{1,63}$ in setStage before use (identifiers cannot be parameters); values are $n parameters',
  },
  {
    file: 'activities/store/db.ts',
    expression: 'name',
    why:
      'CREATE/DROP DATABASE name from DATABASE_URL, checked against ^[A-Za-z_][A-Za-z0-9_-]*$ first ' +
      '(identifiers cannot be parameters); quoted',
  },
  {
    file: 'activities/llm/call-store.ts',
    expression: 'RUN_OF_CALL',
    why:
      'a constant SQL expression exported by activities/llm/spend.ts (the run a ledger row belongs to), ' +
      'spelled once so that it matches the index of migration 036; it holds no value',
  },
];

const SQL_WORDS =
  /\b(SELECT|INSERT\s+INTO|UPDATE|DELETE\s+FROM|CREATE|DROP|ALTER|TRUNCATE|WHERE|VALUES|RETURNING|ON\s+CONFLICT)\b/;

interface Finding {
  readonly file: string;
  readonly line: number;
  readonly expression: string;
}

/** Every non-constant interpolation into SQL text in `files` (paths relative to `root`). */
function findInterpolations(root: string, files: readonly string[]): Finding[] {
  const program = ts.createProgram(
    files.map((f) => path.join(root, f)),
    { noResolve: true, noLib: true, target: ts.ScriptTarget.ES2022, allowJs: false, noEmit: true },
  );
  const checker = program.getTypeChecker();
  const findings: Finding[] = [];

  for (const file of files) {
    const source = program.getSourceFile(path.join(root, file));
    if (!source) throw new Error(`cannot parse ${file}`);
    const calls: ts.CallExpression[] = [];
    const collect = (node: ts.Node) => {
      if (ts.isCallExpression(node)) calls.push(node);
      ts.forEachChild(node, collect);
    };
    collect(source);

    const symbolOf = (node: ts.Node) => {
      const symbol = checker.getSymbolAtLocation(node);
      return symbol && symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    };
    /** The function a parameter belongs to, and the symbol its calls name. */
    const functionSymbol = (fn: ts.SignatureDeclaration): ts.Symbol | undefined => {
      if (ts.isFunctionDeclaration(fn) && fn.name) return symbolOf(fn.name);
      if ((ts.isArrowFunction(fn) || ts.isFunctionExpression(fn)) && ts.isVariableDeclaration(fn.parent)) {
        return symbolOf(fn.parent.name);
      }
      return undefined;
    };
    const callsOf = (symbol: ts.Symbol) =>
      calls.filter((c) => ts.isIdentifier(c.expression) && symbolOf(c.expression) === symbol);

    const constant = (expr: ts.Expression, depth = 0): boolean => {
      if (depth > 20) return false;
      const next = (e: ts.Expression) => constant(e, depth + 1);
      if (ts.isStringLiteral(expr) || ts.isNumericLiteral(expr) || ts.isNoSubstitutionTemplateLiteral(expr))
        return true;
      if (ts.isParenthesizedExpression(expr) || ts.isAsExpression(expr)) return next(expr.expression);
      if (ts.isTemplateExpression(expr)) return expr.templateSpans.every((s) => next(s.expression));
      if (ts.isBinaryExpression(expr) && expr.operatorToken.kind === ts.SyntaxKind.PlusToken) {
        return next(expr.left) && next(expr.right);
      }
      if (ts.isCallExpression(expr) && ts.isIdentifier(expr.expression)) {
        const declaration = symbolOf(expr.expression)?.valueDeclaration;
        return declaration?.getSourceFile() === source && expr.arguments.every(next);
      }
      if (!ts.isIdentifier(expr)) return false;
      const declaration = symbolOf(expr)?.valueDeclaration;
      if (!declaration || declaration.getSourceFile() !== source) return false;
      if (ts.isVariableDeclaration(declaration)) {
        const isConst = (ts.getCombinedNodeFlags(declaration) & ts.NodeFlags.Const) !== 0;
        return isConst && !!declaration.initializer && next(declaration.initializer);
      }
      if (ts.isParameter(declaration) && ts.isIdentifier(declaration.name)) {
        const fn = declaration.parent as ts.SignatureDeclaration;
        const index = fn.parameters.indexOf(declaration);
        const symbol = functionSymbol(fn);
        const uses = symbol ? callsOf(symbol) : [];
        return (
          uses.length > 0 && uses.every((c) => c.arguments[index] !== undefined && next(c.arguments[index]))
        );
      }
      return false;
    };

    /** The text of a template's literal parts. */
    const literalText = (t: ts.TemplateExpression) =>
      t.head.text + t.templateSpans.map((s) => s.literal.text).join(' ');
    /** Whether a template is SQL by where it is used (query text) or by what it says. */
    const isSql = (t: ts.TemplateExpression): boolean => {
      if (SQL_WORDS.test(literalText(t))) return true;
      let node: ts.Node = t;
      while (ts.isBinaryExpression(node.parent) || ts.isParenthesizedExpression(node.parent)) {
        const parent = node.parent;
        if (ts.isBinaryExpression(parent)) {
          const other = parent.left === node ? parent.right : parent.left;
          if (ts.isStringLiteralLike(other) && SQL_WORDS.test(other.text)) return true;
        }
        node = parent;
      }
      const parent = node.parent;
      if (ts.isCallExpression(parent) && parent.arguments[0] === node) {
        const callee = parent.expression;
        if (ts.isPropertyAccessExpression(callee) && callee.name.text === 'query') return true;
      }
      return ts.isPropertyAssignment(parent) && ts.isIdentifier(parent.name) && parent.name.text === 'text';
    };
    const report = (expr: ts.Expression) =>
      findings.push({
        file,
        line: source.getLineAndCharacterOfPosition(expr.getStart()).line + 1,
        expression: expr.getText(source),
      });

    const visit = (node: ts.Node) => {
      if (ts.isTemplateExpression(node) && isSql(node)) {
        for (const span of node.templateSpans) if (!constant(span.expression)) report(span.expression);
      }
      // 'SELECT ... WHERE id = ' + value
      if (
        ts.isBinaryExpression(node) &&
        node.operatorToken.kind === ts.SyntaxKind.PlusToken &&
        [node.left, node.right].some((side) => ts.isStringLiteralLike(side) && SQL_WORDS.test(side.text))
      ) {
        for (const side of [node.left, node.right]) {
          if (!ts.isTemplateExpression(side) && !ts.isBinaryExpression(side) && !constant(side)) report(side);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return findings;
}

async function tsFiles(root: string, dir: string): Promise<string[]> {
  const entries = await readdir(path.join(root, dir), { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
    .sort();
}

describe('SQL in activities/ is parameterized', () => {
  let scratch: string;
  beforeAll(async () => {
    scratch = await mkdtemp(path.join(os.tmpdir(), 'mockworld-sql-static-'));
  });
  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it('finds values spliced into SQL, and accepts constants, checked identifiers and literal-only helpers', async () => {
    await writeFile(
      path.join(scratch, 'sample.ts'),
      `
      const COLUMNS = 'a, b';
      const TABLE = \`t_\${'x'}\`;
      const summary = (column: string) => \`avg(\${column})\`;
      export async function bad(pool: any, runId: string, input: { name: string }, n: number) {
        await pool.query(\`SELECT \${COLUMNS} FROM \${TABLE} WHERE run_id = '\${runId}'\`);
        await pool.query({ text: \`DELETE FROM runs WHERE name = '\${input.name}'\` });
        await pool.query('SELECT * FROM runs WHERE id = ' + n);
        await pool.query(\`SELECT \${summary('x')}, \${summary(runId)} FROM runs\`);
        const where = \`kind = '\${runId}'\`;
        await pool.query(\`SELECT 1 FROM runs WHERE \${where}\`);
        await pool.query('SELECT 1 FROM runs WHERE run_id = $1', [runId]);
      }
      `,
    );
    const found = findInterpolations(scratch, ['sample.ts']).map((f) => f.expression);
    expect(found).toEqual(['runId', 'input.name', 'n', 'summary(runId)', 'where']);
  });

  it('has no interpolation of values in any activity file, beyond the explained allow-list', async () => {
    const files = await tsFiles(REPO_ROOT, 'activities');
    expect(files.length).toBeGreaterThan(40);
    const findings = findInterpolations(REPO_ROOT, files);
    const allowed = (f: Finding) => ALLOWED.some((a) => a.file === f.file && a.expression === f.expression);
    const unexplained = findings
      .filter((f) => !allowed(f))
      .map((f) => `${f.file}:${f.line}: \${${f.expression}}`);
    expect(unexplained, 'splice values as $n parameters, or add the identifier to ALLOWED with why').toEqual(
      [],
    );
    // Every allow-list entry is still needed: a stale one would hide a new interpolation of the same text.
    for (const entry of ALLOWED) {
      expect(
        findings.some((f) => f.file === entry.file && f.expression === entry.expression),
        `${entry.file}: ${entry.expression}`,
      ).toBe(true);
    }
  });
});
