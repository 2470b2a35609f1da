import { modelGateway } from '../service-commands.js';
import type { Command } from './command.js';

/**
 * `mockworld gateway [--port N] [--host H]`: the model gateway, which finishes and records every
 * paid model call, until Ctrl-C.
 */
export const gatewayCommand: Command = {
  name: 'gateway',
  run: ({ values }) => modelGateway(values),
};
