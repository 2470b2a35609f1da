import { worldService } from '../world-command.js';
import type { Command } from './command.js';

/**
 * `mockworld world [--config world.yaml] [--port N] [--host H]`: the world service for external
 * RL frameworks, until Ctrl-C.
 */
export const worldCommand: Command = {
  name: 'world',
  run: ({ values }) => worldService(values),
};
