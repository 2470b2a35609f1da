import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';

/**
 * The venvs install from deploy/locks/*.txt (deploy/python/venv.sh); the pins people edit live in
 * pyproject.toml and requirements files. A pin changed without `bash deploy/python/lock.sh` would
 * leave the venvs on the old version: every exact pin of a lock's sources must be in the lock.
 */
const LOCKS: Record<string, string[]> = {
  trainer: ['workers/trainer/pyproject.toml', 'deploy/trainer-requirements.txt'],
  sandbox: ['deploy/sandbox-requirements.txt'],
  eval: ['workers/evaluation/pyproject.toml'],
  verl: ['deploy/verl-requirements.txt', 'integrations/verl/pyproject.toml'],
  datasets: ['deploy/datasets-requirements.txt'],
};

const read = (file: string) => readFileSync(path.join(REPO_ROOT, file), 'utf8');

/** PEP 503 name normalization, so `PyYAML` and `pyyaml` are one package. */
const normalize = (name: string) => name.toLowerCase().replace(/[-_.]+/g, '-');

/** `name==version` pins, quoted (pyproject.toml) or one per line (requirements), extras dropped. */
function pins(text: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const match of text.matchAll(/^\s*"?([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^"\s;#,]+)/gm)) {
    found.set(normalize(match[1]!), match[2]!);
  }
  return found;
}

describe('Python lock files', () => {
  for (const [name, sources] of Object.entries(LOCKS)) {
    it(`deploy/locks/${name}.txt holds every pin of ${sources.join(' and ')}`, () => {
      const locked = pins(read(`deploy/locks/${name}.txt`));
      for (const source of sources) {
        for (const [pkg, version] of pins(read(source))) {
          expect(locked.get(pkg), `${pkg} in ${source} (run bash deploy/python/lock.sh)`).toBe(version);
        }
      }
    });
  }

  it('lets no lock name the CPU-only torch build, so GPU nodes take the CUDA one', () => {
    for (const name of Object.keys(LOCKS)) {
      expect(read(`deploy/locks/${name}.txt`)).not.toMatch(/^torch==.*\+cpu/m);
    }
  });
});
