import { budgetCommand } from './budget.js';
import { cancelCommand } from './cancel.js';
import { codecServerCommand } from './codec-server.js';
import type { Command } from './command.js';
import { demoCommand } from './demo.js';
import { exportCommand } from './export.js';
import { gatewayCommand } from './gateway.js';
import { importCommand } from './import.js';
import { initCommand } from './init.js';
import { reportCommand } from './report.js';
import { searchIndexCommand } from './search-index.js';
import { pauseCommand, resumeCommand } from './signal.js';
import { stackCommand } from './stack.js';
import { startCommand } from './start.js';
import { statusCommand } from './status.js';
import { stopCommand } from './stop.js';
import { viewCommand } from './view.js';
import { workerCommand } from './worker.js';
import { worldCommand } from './world.js';

/** Every `mockworld` subcommand, keyed by the name it is called by (cli/main.ts dispatches through it). */
export const COMMANDS: Readonly<Record<string, Command>> = Object.fromEntries(
  [
    stackCommand,
    workerCommand,
    startCommand,
    statusCommand,
    pauseCommand,
    resumeCommand,
    budgetCommand,
    stopCommand,
    cancelCommand,
    reportCommand,
    exportCommand,
    importCommand,
    searchIndexCommand,
    demoCommand,
    codecServerCommand,
    gatewayCommand,
    worldCommand,
    viewCommand,
    initCommand,
  ].map((command) => [command.name, command]),
);

/**
 * The command called `name`, or undefined. Own keys only: `mockworld constructor` must be an
 * unknown command, not Object.prototype's.
 */
export function findCommand(name: string): Command | undefined {
  return Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
}
