import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';

const out = mkdtempSync(path.join(os.tmpdir(), 'mw-docs-site-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('the documentation', () => {
  it('builds as a site with its API reference and no link to a page that does not exist', async () => {
    const bin = (name: string) => path.join(REPO_ROOT, 'node_modules', '.bin', name);
    // The API reference from the exported types first (typedoc.json), then the site; the build
    // fails on a dead link, its error output naming each one.
    await promisify(execFile)(bin('typedoc'), [], { cwd: REPO_ROOT });
    await promisify(execFile)(bin('vitepress'), ['build', 'docs', '--outDir', out], { cwd: REPO_ROOT });
    const pages = readdirSync(out).filter((f) => f.endsWith('.html'));
    const sources = readdirSync(path.join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md'));
    const expected = sources.filter((f) => f !== 'README.md').map((f) => f.replace(/\.md$/, '.html'));
    expect(pages).toEqual(expect.arrayContaining(expected));
    const api = readdirSync(path.join(out, 'api', 'client', 'classes'));
    expect(api).toEqual(expect.arrayContaining(['MockworldClient.html', 'MockworldRun.html']));
  }, 300_000);

  it('keeps the README a front door: at most 300 lines, linking every page', () => {
    const readme = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    const sources = readdirSync(path.join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md'));
    for (const page of sources.filter((f) => f !== 'README.md')) expect(readme).toContain(`(docs/${page})`);
  });
});
