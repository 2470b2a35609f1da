import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DATA_FILE_NOT_FOUND,
  DATA_FILE_OUTSIDE_ROOTS,
  dataRoots,
  resolveDataFile,
  SHIPPED_EXAMPLES_DIR,
  workerDataFileSearch,
  type DataFileSearch,
} from '../../activities/data-files.js';
import { loadTemplate } from '../../activities/templates/templates.js';
import { agentSystemPrompt } from '../../activities/world/agent-prompt.js';
import { readSpecFile } from '../../cli/spec-file.js';
import { REPO_ROOT } from '../../deploy/paths.js';

describe("a spec's data paths as a worker resolves them", () => {
  let root: string;
  let search: DataFileSearch;

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'mockworld-data-files-'));
    search = { dataDir: path.join(root, 'data'), examplesDir: path.join(root, 'examples'), roots: [] };
    await mkdir(path.join(search.dataDir, 'sets'), { recursive: true });
    await mkdir(path.join(search.examplesDir, 'sets'), { recursive: true });
    await mkdir(path.join(search.dataDir, 'folder.jsonl'));
    for (const [dir, file] of [
      [search.dataDir, 'both.jsonl'],
      [search.examplesDir, 'both.jsonl'],
      [search.dataDir, 'sets/mine.jsonl'],
      [search.examplesDir, 'sets/shipped.jsonl'],
      [search.examplesDir, 'folder.jsonl'],
    ] as const)
      await writeFile(path.join(dir, file), '{}\n');
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('looks in the data directory first, then the shipped examples', () => {
    expect(resolveDataFile('both.jsonl', 'personas', search)).toBe(path.join(search.dataDir, 'both.jsonl'));
    expect(resolveDataFile('sets/mine.jsonl', 'seed questions', search)).toBe(
      path.join(search.dataDir, 'sets/mine.jsonl'),
    );
    expect(resolveDataFile('sets/shipped.jsonl', 'seed questions', search)).toBe(
      path.join(search.examplesDir, 'sets/shipped.jsonl'),
    );
    // A folder of that name is not the file: the search goes on.
    expect(resolveDataFile('folder.jsonl', 'personas', search)).toBe(
      path.join(search.examplesDir, 'folder.jsonl'),
    );
  });

  it('uses an absolute path inside the roots as it is, even one that does not exist (reading it says so)', () => {
    const absolute = path.join(search.dataDir, 'elsewhere', 'x.jsonl');
    expect(resolveDataFile(absolute, 'personas', search)).toBe(absolute);
  });

  const refusal = (file: string, within: DataFileSearch = search) => {
    try {
      resolveDataFile(file, 'personas', within);
    } catch (e) {
      return e as ApplicationFailure;
    }
    throw new Error(`${file} was not refused`);
  };

  it('refuses a path outside the data roots, however it is written, and says how to allow it', async () => {
    const outside = path.join(root, 'outside.jsonl');
    await writeFile(outside, '{"id": "secret"}\n');
    await symlink(outside, path.join(search.dataDir, 'link.jsonl'));
    await symlink(root, path.join(search.dataDir, 'up'));
    for (const file of [
      outside,
      '/etc/passwd',
      '../outside.jsonl',
      'sets/../../../outside.jsonl',
      'link.jsonl',
      'up/outside.jsonl',
    ]) {
      const failure = refusal(file);
      expect(failure.type, file).toBe(DATA_FILE_OUTSIDE_ROOTS);
      expect(failure.nonRetryable).toBe(true);
      expect(failure.message).toContain(`personas file ${JSON.stringify(file)} lies outside`);
      expect(failure.message).toContain(search.dataDir);
      expect(failure.message).toContain('MOCKWORLD_DATA_ROOTS');
      expect(failure.message).not.toContain('secret');
    }
    // A root of MOCKWORLD_DATA_ROOTS admits it; links are followed to where they lead.
    const widened = { ...search, roots: [root] };
    expect(resolveDataFile(outside, 'personas', widened)).toBe(outside);
    expect(resolveDataFile('link.jsonl', 'personas', widened)).toBe(outside);
  });

  it('counts no data directory that is the file system root as a root', () => {
    const fromSlash = { dataDir: '/', examplesDir: search.examplesDir, roots: [] };
    expect(dataRoots(fromSlash)).toEqual([search.examplesDir]);
    // Looked up in the examples only: what the working directory holds is never probed.
    const failure = refusal('etc/passwd', fromSlash);
    expect(failure.type).toBe(DATA_FILE_NOT_FOUND);
    expect(failure.details).toEqual([
      { what: 'personas', file: 'etc/passwd', tried: [path.join(search.examplesDir, 'etc/passwd')] },
    ]);
    expect(refusal('../../etc/passwd', fromSlash).type).toBe(DATA_FILE_OUTSIDE_ROOTS);
  });

  it('fails a missing file without retries, naming every place tried and the fixes', () => {
    let error: unknown;
    try {
      resolveDataFile('sets/nope.jsonl', 'test questions', search);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ApplicationFailure);
    const failure = error as ApplicationFailure;
    expect(failure.type).toBe(DATA_FILE_NOT_FOUND);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('test questions file "sets/nope.jsonl"');
    expect(failure.message).toContain(path.join(search.dataDir, 'sets/nope.jsonl'));
    expect(failure.message).toContain(path.join(search.examplesDir, 'sets/nope.jsonl'));
    expect(failure.message).toContain('MOCKWORLD_DATA_DIR');
    expect(failure.message).toContain('mockworld start');
    expect(failure.details).toEqual([
      {
        what: 'test questions',
        file: 'sets/nope.jsonl',
        tried: [
          path.join(search.dataDir, 'sets/nope.jsonl'),
          path.join(search.examplesDir, 'sets/nope.jsonl'),
        ],
      },
    ]);
  });

  it('keeps the error short for an absurd path', () => {
    const long = `${'d/'.repeat(200_000)}x.jsonl`;
    const message = (() => {
      try {
        resolveDataFile(long, 'personas', search);
      } catch (e) {
        return (e as Error).message;
      }
      return '';
    })();
    expect(message).toContain('more characters');
    expect(message.length).toBeLessThan(3_000);
  });

  it("is the worker's working directory, then this package's examples/, when MOCKWORLD_DATA_DIR is unset", () => {
    // The test process has no MOCKWORLD_DATA_DIR (the environment is read once per process).
    expect(process.env.MOCKWORLD_DATA_DIR).toBeUndefined();
    // vitest.config.ts adds the temporary folder, where tests write their data, as a root.
    expect(workerDataFileSearch()).toEqual({
      dataDir: process.cwd(),
      examplesDir: SHIPPED_EXAMPLES_DIR,
      roots: [os.tmpdir()],
    });
    expect(SHIPPED_EXAMPLES_DIR).toBe(path.join(REPO_ROOT, 'examples'));
  });

  it('is how template overrides are found, in the asynchronous and the synchronous loader', async () => {
    // The shipped examples hold no template; a relative override found nowhere fails in both
    // loaders with the same non-retryable failure, and an absolute one is read.
    const missing = { version: 'v1', overrides: { agent: 'no-such-agent.md', judge: 'no-such-judge.md' } };
    await expect(loadTemplate('judge', missing)).rejects.toMatchObject({
      type: DATA_FILE_NOT_FOUND,
      message: expect.stringContaining('judge template file "no-such-judge.md"'),
    });
    expect(() => agentSystemPrompt(missing)).toThrow(/agent template file "no-such-agent.md"/);
    const own = path.join(root, 'judge.md');
    await writeFile(own, 'Judge {{task}}.');
    const loaded = await loadTemplate('judge', { version: 'v1', overrides: { judge: own } });
    expect(loaded.text).toBe('Judge {{task}}.');
  });
});

describe("a spec file's data paths as `mockworld start` resolves them", () => {
  it('makes every relative path absolute against the spec file, template overrides of training too', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-spec-paths-'));
    try {
      const tiny = await readFile(path.join(SHIPPED_EXAMPLES_DIR, 'grpo-tiny.yaml'), 'utf8');
      const file = path.join(dir, 'grpo.yaml');
      await writeFile(file, `${tiny}\ntemplates: { overrides: { judge: prompts/judge.md } }\n`);
      const spec = await readSpecFile(file);
      expect(spec.kind === 'GrpoTraining' && spec.templates.overrides).toEqual({
        judge: path.join(dir, 'prompts', 'judge.md'),
      });
      const synthesis = await readSpecFile(path.join(SHIPPED_EXAMPLES_DIR, 'synthesis-demo.yaml'));
      expect(synthesis.kind === 'Synthesis' && synthesis.personas.path).toBe(
        path.join(SHIPPED_EXAMPLES_DIR, 'personas.jsonl'),
      );
      // The math and search benchmarks' files, in an Evaluation and in a training run's benchmarks.
      const evaluation = await readSpecFile(path.join(SHIPPED_EXAMPLES_DIR, 'evaluation', 'reasoning.yaml'));
      expect(evaluation.kind === 'Evaluation' && evaluation.benchmarks.math?.datasets[0]!.path).toBe(
        path.join(SHIPPED_EXAMPLES_DIR, 'evaluation', 'math-sample.jsonl'),
      );
      await writeFile(
        file,
        `${tiny}\nbenchmarks: { every: 1, server: { baseUrl: 'http://127.0.0.1:8001/v1' }, math: { datasets: [{ name: aime, path: sets/aime.jsonl }] } }\n`,
      );
      const withBenchmarks = await readSpecFile(file);
      expect(
        withBenchmarks.kind === 'GrpoTraining' && withBenchmarks.benchmarks?.math?.datasets[0]!.path,
      ).toBe(path.join(dir, 'sets', 'aime.jsonl'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
