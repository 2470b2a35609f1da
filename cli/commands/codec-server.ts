import { codecServer } from '../service-commands.js';
import type { Command } from './command.js';

/**
 * `mockworld codec-server [--port N] [--host H] [--origin URL]...`: decrypts payloads for the
 * Temporal UI until Ctrl-C.
 */
export const codecServerCommand: Command = {
  name: 'codec-server',
  run: ({ values }) => codecServer(values),
};
