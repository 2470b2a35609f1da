import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../../deploy/paths.js';

export const RESULTS_DIR = path.join(REPO_ROOT, 'bench', 'results');

/** The JSON as the project's Prettier settings print it (so `npm run lint` passes), else as is. */
async function asProjectJson(text: string, file: string): Promise<string> {
  try {
    const prettier = await import('prettier');
    const options = await prettier.resolveConfig(file);
    return await prettier.format(text, { ...options, parser: 'json' });
  } catch {
    return text; // prettier is a dev dependency: without it the file is still valid JSON
  }
}

/**
 * Writes bench/results/<name>.json (or <BENCH_RESULTS_NAME>.json, for a driver that runs a bench
 * with other settings and must not overwrite its main figures), headed by the benchmark's name, the
 * date and the machine, and says so on stdout; returns the file's path.
 */
export async function writeResults(name: string, results: Record<string, unknown>): Promise<string> {
  const file = path.join(RESULTS_DIR, `${process.env.BENCH_RESULTS_NAME ?? name}.json`);
  const headed = {
    benchmark: name,
    date: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    ...results,
  };
  await mkdir(RESULTS_DIR, { recursive: true });
  await writeFile(file, await asProjectJson(`${JSON.stringify(headed, null, 2)}\n`, file));
  console.log(`\nwritten ${path.relative(process.cwd(), file)}`);
  return file;
}
