import { connectClient } from '../../client/connect.js';
import { signalRun } from '../../client/runs.js';
import type { Command } from './command.js';

/** A command that sends the run the signal of its own name: pause and resume differ in nothing else. */
function signalCommand(signal: 'pause' | 'resume'): Command {
  return {
    name: signal,
    async run({ print, needId }) {
      const id = needId();
      await signalRun(await connectClient(), id, signal);
      print(`${signal} sent to ${id}`, { workflowId: id, signal });
      return 0;
    },
  };
}

/** `mockworld pause <id>`: the run starts no new work; work already running finishes. */
export const pauseCommand = signalCommand('pause');

/** `mockworld resume <id>`: the run starts new work again. */
export const resumeCommand = signalCommand('resume');
