import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';

/** Top-level folders whose files the code and docs cite by path. */
const PARTS = [
  'activities',
  'workflows',
  'schemas',
  'workers',
  'services',
  'cli',
  'client',
  'deploy',
  'bench',
  'testkit',
  'test',
  'examples',
  'docs',
  'integrations',
];
/** A cited path: a part, then a file with an extension, not itself the tail of a longer path (dist/...). */
const CITED = new RegExp(
  `(?<![\\w./-])(?:${PARTS.join('|')})/[A-Za-z0-9_./-]+\\.(?:ts|py|md|sh|json|jsonl|yaml|mjs|txt|svg|png|sql)\\b`,
  'g',
);
/** Files that name paths of other trees or of the output a run writes, not of this repository. */
const NOT_CITING = [/^test\/histories\//, /^bench\/results\//, /^package-lock\.json$/];

describe('docs and comments cite files that exist', () => {
  it('every path under a top-level part named in a tracked text file is in the repository', () => {
    const files = execFileSync('git', ['ls-files'], { cwd: REPO_ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((f) => /\.(ts|py|md|sh|mjs|yaml|yml|toml)$/.test(f) && !NOT_CITING.some((re) => re.test(f)));
    const missing: string[] = [];
    for (const file of files) {
      const text = readFileSync(path.join(REPO_ROOT, file), 'utf8');
      for (const cited of new Set(text.match(CITED) ?? [])) {
        if (!existsSync(path.join(REPO_ROOT, cited))) missing.push(`${file}: ${cited}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
