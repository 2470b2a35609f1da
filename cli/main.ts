#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { closePools, explainDatabaseError } from '../activities/store/db.js';
import { DatasetImportError } from '../activities/synthesis/import.js';
import { loadEnvironment } from '../schemas/environment.js';
import { SpecValidationError } from '../schemas/spec-error.js';
import type { CommandContext, CommandOptions } from './commands/command.js';
import { findCommand } from './commands/index.js';
import { UsageError } from './usage.js';

/** Printed for --help, for no command, and after every UsageError. */
const USAGE = `mockworld: durable ML pipelines on Temporal

  mockworld stack up|down|status        local Temporal dev server (+ UI :8233), PostgreSQL schema, embedded model
  mockworld worker [--task-queue Q] [--local-database]
                                        run a CPU worker (workflows + activities) until Ctrl-C; with no
                                        DATABASE_URL and no terminal it refuses unless --local-database
  mockworld start <spec.yaml|json> [--id ID] [--wait]
                                        validate a spec, then start its run (workflow type = spec kind)
  mockworld status <id> [--task N | --cells | --tasks | --metrics]
                                        state, progress and counts of a run (or the stage of task N,
                                        the state of every cell of a scaling study, or of a training
                                        run the status of each task of the iteration, the metrics of
                                        the latest finished one)
  mockworld pause <id> | resume <id>    stop/continue starting new work (running work finishes)
  mockworld budget <id> <usd>           set a run's budget for priced model calls; a run paused at its
                                        budget resumes when the new one is above what it spent
  mockworld stop <id>                   GRPO / SFT: finish the iteration (step), keep its checkpoint,
                                        complete
  mockworld cancel <id>                 cancel a run; it records 'cancelled'
  mockworld report <id>                 stored statistics and model usage by role; for a training
                                        run its metrics per iteration (SFT: its loss per step); for
                                        a scaling study its fitted report (Markdown tables, SVG plots)
  mockworld export <id> [--out DIR] [--format F,...]
                                        write a synthesis run's dataset: jsonl (tasks.jsonl, verl.jsonl;
                                        the default), verl-parquet (verl's RL layout), hf (Hugging Face
                                        datasets: Parquet shards + dataset card), sft (demonstrations
                                        as chats with tool calls), or all; of an Evaluation run, every
                                        trial with its trajectory (trials.jsonl)
  mockworld import <tasks.jsonl> [--id ID]
                                        store exported tasks (or your own, same format) as a dataset
                                        a GrpoTraining spec trains on (dataset.synthesisRunId: ID)
  mockworld search-index <corpus.jsonl> [--collection NAME]
                                        index {"id", "title", "text", "url"} documents for the offline
                                        search tool (search: { kind: offline, collection: NAME })
  mockworld demo [spec]                 the main job: stack up, a worker, a run on the embedded model
  mockworld codec-server [--port N] [--host H] [--origin URL]...
                                        decrypt payloads for the Temporal UI (needs MOCKWORLD_PAYLOAD_KEY)
  mockworld world [--config world.yaml] [--port N] [--host H]
                                        the world service for external RL frameworks (verl): sessions,
                                        task tools, ask_user and the judge over HTTP (127.0.0.1:11438),
                                        and as an OpenEnv environment on /ws (TRL, OpenEnv clients)
  mockworld gateway [--port N] [--host H]
                                        model gateway: finishes and records every paid model call even
                                        when the worker that asked dies (workers: MOCKWORLD_MODEL_GATEWAY_URL)
  mockworld view [--port N] [--host H]  results viewer in the browser (runs, tasks, transcripts, curves,
                                        fits; read-only; 127.0.0.1:8234 unless told otherwise)
  mockworld init [dir] [--mockworld SPEC]
                                        write a worker project: the plugin in a worker, a typed client
                                        script and a Smoke spec (npm install, npm run worker, npm run smoke)

  --json   machine-readable output for scripts`;

/** The flags every command shares one parser for: each command reads the ones it takes. */
const OPTIONS = {
  json: { type: 'boolean', default: false },
  wait: { type: 'boolean', default: false },
  id: { type: 'string' },
  task: { type: 'string' },
  cells: { type: 'boolean', default: false },
  tasks: { type: 'boolean', default: false },
  metrics: { type: 'boolean', default: false },
  out: { type: 'string' },
  format: { type: 'string', default: 'jsonl' },
  config: { type: 'string' },
  collection: { type: 'string' },
  'task-queue': { type: 'string' },
  'local-database': { type: 'boolean', default: false },
  port: { type: 'string' },
  host: { type: 'string' },
  origin: { type: 'string', multiple: true },
  mockworld: { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

/** Parses the command line and runs its command (cli/commands/); resolves to the exit code. */
async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  const [name, ...args] = positionals;
  if (values.help || !name) {
    console.log(USAGE);
    return name || values.help ? 0 : 2;
  }
  const command = findCommand(name);
  if (!command) throw new UsageError(`unknown command "${name}"`);
  return command.run(commandContext(name, values, args));
}

/** What the command called `name` runs with: its flags, its arguments and the shared output helpers. */
function commandContext(name: string, values: CommandOptions, args: string[]): CommandContext {
  return {
    values,
    args,
    print: (human, machine) => console.log(values.json ? JSON.stringify(machine, null, 2) : human),
    needId: () => {
      const id = args[0];
      if (!id) throw new UsageError(`mockworld ${name} needs a workflow id`);
      return id;
    },
  };
}

/** A failure to reach PostgreSQL says where it was expected and what to do; others as they are. */
function explainError(error: unknown): unknown {
  try {
    return explainDatabaseError(error, loadEnvironment().DATABASE_URL);
  } catch {
    return error; // the environment itself is invalid: the error says which variable
  }
}

main(process.argv.slice(2))
  .then(async (code) => {
    await closePools();
    process.exit(code);
  })
  .catch(async (error: unknown) => {
    await closePools();
    if (error instanceof UsageError) {
      console.error(`${error.message}\n\n${USAGE}`);
      process.exit(2);
    }
    if (error instanceof SpecValidationError || error instanceof DatasetImportError) {
      console.error(error.message);
      process.exit(2);
    }
    const explained = explainError(error);
    console.error(explained instanceof Error ? explained.message : explained);
    process.exit(1);
  });
