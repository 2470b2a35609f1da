import { viewer } from '../service-commands.js';
import type { Command } from './command.js';

/** `mockworld view [--port N] [--host H]`: the read-only results viewer in the browser until Ctrl-C. */
export const viewCommand: Command = {
  name: 'view',
  run: ({ values }) => viewer(values),
};
