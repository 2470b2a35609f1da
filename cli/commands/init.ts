import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { scaffoldFiles } from '../scaffold.js';
import { UsageError } from '../usage.js';
import type { Command } from './command.js';

/** `mockworld init [dir] [--mockworld SPEC]`: writes a worker project into an empty or new folder. */
export const initCommand: Command = {
  name: 'init',
  async run({ args, values, print }) {
    const dir = path.resolve(args[0] ?? '.');
    await mkdir(dir, { recursive: true });
    const taken = (await readdir(dir)).filter((entry) => !entry.startsWith('.git'));
    if (taken.length)
      throw new UsageError(`mockworld init writes into an empty folder; ${dir} holds ${taken.join(', ')}`);
    const name = path
      .basename(dir)
      .toLowerCase()
      .replace(/[^a-z0-9._-]/g, '-');
    const files = scaffoldFiles({ name, mockworld: values.mockworld });
    for (const [file, content] of Object.entries(files)) await writeFile(path.join(dir, file), content);
    print(
      `wrote ${Object.keys(files).join(', ')} into ${dir}\nnext: cd ${path.relative('.', dir) || '.'} && npm install, then see its README.md`,
      { dir, files: Object.keys(files) },
    );
    return 0;
  },
};
