import path from 'node:path';
import { REPO_ROOT } from '../../deploy/paths.js';
import { demo } from '../demo.js';
import type { Command } from './command.js';

/**
 * `mockworld demo [spec]`: stack up, a worker and one run on the embedded model (the bundled
 * synthesis demo unless a spec is named).
 */
export const demoCommand: Command = {
  name: 'demo',
  run: ({ args }) => demo(args[0] ?? path.join(REPO_ROOT, 'examples', 'synthesis-demo.yaml')),
};
