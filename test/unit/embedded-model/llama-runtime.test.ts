import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { entryOf, LLAMA_CPP_PIN, runtimeDir } from '../../../deploy/embedded-model/llama-runtime.js';

const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

async function packageWith(manifest: object): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mw-entry-'));
  dirs.push(dir);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'package.json'), JSON.stringify(manifest));
  return dir;
}

describe("the embedded model's runtime, installed on first use", () => {
  it.each([
    [
      { exports: { '.': { types: './a.d.ts', import: './dist/index.js', require: './c.cjs' } } },
      './dist/index.js',
    ],
    [{ exports: { '.': { node: { import: './n.js' }, default: './d.js' } } }, './n.js'],
    [{ exports: './only.js' }, './only.js'],
    [{ main: 'main.js' }, 'main.js'],
  ])('finds the ESM entry of %j', async (manifest, entry) => {
    expect(await entryOf(await packageWith(manifest))).toBe(entry);
  });

  it('refuses a package that names no entry', async () => {
    await expect(entryOf(await packageWith({ name: 'x' }))).rejects.toThrow(/names no entry module/);
  });

  it('installs the pinned version under $MOCKWORLD_HOME/runtime, one folder per version', () => {
    expect(runtimeDir('/home/u/.mockworld')).toBe(
      `/home/u/.mockworld/runtime/node-llama-cpp-${LLAMA_CPP_PIN.version}`,
    );
  });

  it('pins the version the repository is built and tested against', async () => {
    const manifest = (await import('../../../package.json', { with: { type: 'json' } })).default as {
      devDependencies: Record<string, string>;
      peerDependencies: Record<string, string>;
    };
    expect(manifest.devDependencies['node-llama-cpp']).toBe(LLAMA_CPP_PIN.version);
    expect(manifest.peerDependencies['node-llama-cpp']).toBe(LLAMA_CPP_PIN.version);
  });
});
