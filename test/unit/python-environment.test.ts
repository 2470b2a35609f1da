import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';
import { EnvironmentSchema } from '../../schemas/environment.js';
import { PYTHON_ENVIRONMENT } from '../../schemas/python-environment.js';

/** The Python packages whose settings docs/configuration.md lists (their tests excluded). */
const PYTHON_SOURCES = ['workers/trainer', 'workers/evaluation', 'integrations/verl'];

async function pythonFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map(async (entry) => {
      const at = path.join(dir, entry.name);
      if (entry.isDirectory())
        return entry.name === 'tests' || entry.name.startsWith('.') ? [] : pythonFiles(at);
      return entry.name.endsWith('.py') ? [at] : [];
    }),
  );
  return nested.flat();
}

/** Every MOCKWORLD_ name written as a string in the Python sources: what they read. */
async function mockworldNamesInPython(): Promise<Set<string>> {
  const files = (
    await Promise.all(PYTHON_SOURCES.map((dir) => pythonFiles(path.join(REPO_ROOT, dir))))
  ).flat();
  const names = new Set<string>();
  for (const file of files)
    for (const match of (await readFile(file, 'utf8')).matchAll(/["'](MOCKWORLD_[A-Z0-9_]+)["']/g))
      names.add(match[1]!);
  return names;
}

/**
 * Every setting documented from its one source (issue 32): a variable a Python worker reads is in
 * the TypeScript environment schema or the Python workers' list that docs/configuration.md is
 * generated from, and that list names nothing the Python code does not read.
 */
describe("the Python workers' environment variables", () => {
  it('are all documented, and the documented ones are all read', async () => {
    const read = await mockworldNamesInPython();
    const shared = new Set(Object.keys(EnvironmentSchema.shape));
    const own = new Set(PYTHON_ENVIRONMENT.map((v) => v.name));
    expect(read.size).toBeGreaterThan(10);
    expect([...read].filter((name) => !shared.has(name) && !own.has(name))).toEqual([]);
    const ownMockworld = [...own].filter((name) => name.startsWith('MOCKWORLD_'));
    expect(ownMockworld.filter((name) => !read.has(name))).toEqual([]);
    expect(ownMockworld.filter((name) => shared.has(name))).toEqual([]); // one row per variable
  });
});
