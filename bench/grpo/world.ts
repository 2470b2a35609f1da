/**
 * The GRPO benchmarks' scripted world (bench/grpo.ts, bench/worker-memory.ts): kept tasks of a
 * fictitious synthesis run, a model server that plays every role at once (plus its latency),
 * deterministically, and the GrpoTraining spec that trains on them.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { taskIdOf } from '../../activities/synthesis/task-id.js';
import type { Reply, ScriptedRequest } from '../../testkit/model-server.js';
import { spawnModelServer, type ModelServerProcess } from '../../testkit/model-server-process.js';

/** The seed's default turn budget; the scripted policy finishes in 3 or 4 turns. */
export const MAX_TURNS = 16;
/** In-flight requests per endpoint and worker: high, so the model limiter bounds neither path. */
export const MODEL_MAX_CONCURRENCY = 4096;

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'lookup_record',
      description: 'Look up a record by id',
      parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    },
  },
  {
    type: 'function',
    function: {
      name: 'update_record',
      description: 'Set the status of a record',
      parameters: {
        type: 'object',
        properties: { id: { type: 'string' }, status: { type: 'string' } },
        required: ['id', 'status'],
      },
    },
  },
];
const QUESTION = 'Which record do you mean?';

function requestText(request: ScriptedRequest): string {
  return request.body.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
}

/**
 * Policy: even sampling seeds (seed + sample index) ask the user first, odd ones do not; then
 * look the record up, fix it, answer (3 or 4 policy calls). Tool calls of a task are the same in
 * every rollout, so the tool simulator is called once per (task, tool, args) and the mapping
 * answers the rest. Judge: sub-goals from the tool calls in the transcript, the
 * required interaction from the question: R = 1 for an asking rollout, 0.5 otherwise, so every
 * group has reward variance.
 */
export function grpoScript(request: ScriptedRequest): Reply {
  switch (request.role) {
    case 'policy': {
      const i = Number(/task-(\d+)/.exec(requestText(request))?.[1] ?? 0);
      const seed = Number(request.body.seed ?? 0);
      const turn = request.body.messages.filter((m) => m.role === 'assistant').length;
      const steps = seed % 2 === 0 ? ['ask', 'lookup', 'update'] : ['lookup', 'update'];
      const call = (name: string, args: unknown): Reply => ({ toolCalls: [{ name, arguments: args }] });
      switch (steps[turn]) {
        case 'ask':
          return call('ask_user', { question: `${QUESTION} (sample ${seed})` });
        case 'lookup':
          return call('lookup_record', { id: `R-${i}` });
        case 'update':
          return call('update_record', { id: `R-${i}`, status: 'fixed' });
        default:
          return `Done: R-${i} is fixed (sample ${seed}).`; // every transcript differs: one judge call each
      }
    }
    case 'tool-simulator':
      return JSON.stringify({ equivalentTo: null, response: JSON.stringify({ status: 'open' }) });
    case 'user-simulator':
      return 'The record id is the one in my ticket.';
    case 'judge': {
      const text = requestText(request);
      return JSON.stringify({
        forbidden: [{ index: 0, violated: false, evidence: '' }],
        subGoals: [
          { index: 0, achieved: text.includes('agent calls lookup_record(') },
          { index: 1, achieved: text.includes('agent calls update_record(') },
        ],
        requiredInteractions: [{ index: 0, satisfied: text.includes(QUESTION) }],
      });
    }
    default:
      throw new Error(`unscripted role ${request.role}`);
  }
}

/** The world's model server in a child process of its own (./world-server.ts), so its CPU is counted apart. */
export function startGrpoWorldServer(): Promise<ModelServerProcess> {
  return spawnModelServer(path.join(path.dirname(fileURLToPath(import.meta.url)), 'world-server.ts'));
}

/** Writes `count` kept tasks of `synthesisRunId`, as a Synthesis run leaves them; returns their ids. */
export async function insertKeptTasks(url: string, synthesisRunId: string, count: number): Promise<string[]> {
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  try {
    const rows = Array.from({ length: count }, (_, idx) => ({
      task_id: taskIdOf(synthesisRunId, idx),
      run_id: synthesisRunId,
      idx,
      persona_id: `p${idx}`,
      workflow: ['Find the record', 'Fix it'],
      tools: TOOLS,
      forbidden: ['Delete records'],
      instruction: `Please sort out task-${idx} for me.`,
      hidden_context: `For task-${idx}: the record id is R-${idx}.`,
      rubric: {
        forbidden: ['Delete records'],
        subGoals: ['The record is found', 'The record is fixed'],
        requiredInteractions: ['Ask which record'],
      },
    }));
    await sql.query(
      `INSERT INTO tasks (task_id, run_id, idx, persona_id, stage, workflow, tools, forbidden, instruction, hidden_context, rubric)
       SELECT r ->> 'task_id', r ->> 'run_id', (r ->> 'idx')::int, r ->> 'persona_id', 'kept', r -> 'workflow',
              r -> 'tools', r -> 'forbidden', r ->> 'instruction', r ->> 'hidden_context', r -> 'rubric'
         FROM jsonb_array_elements($1::jsonb) AS r`,
      [JSON.stringify(rows)],
    );
    return rows.map((r) => r.task_id);
  } finally {
    await sql.end();
  }
}

/** A GrpoTraining spec over the kept tasks, every role on the world's model server (model `<model>-<role>`). */
export function specFor(opts: {
  synthesisRunId: string;
  modelUrl: string;
  model: string;
  tasks: number;
  rolloutsPerTask: number;
  groupsInFlight: number;
  gpuTaskQueue: string;
}) {
  const endpoint = (role: string) => ({
    baseUrl: opts.modelUrl,
    model: `${opts.model}-${role}`,
    maxConcurrency: MODEL_MAX_CONCURRENCY,
  });
  return {
    kind: 'GrpoTraining',
    name: 'bench',
    dataset: { synthesisRunId: opts.synthesisRunId, heldOutTasks: 0 },
    policy: {
      base: { kind: 'tiny', seed: 0 },
      endpoint: endpoint('policy'),
      sampling: { temperature: 1, maxTokens: 64, seed: 7 },
    },
    judge: { endpoint: endpoint('judge') },
    toolSimulator: { endpoint: endpoint('tools') },
    userSimulator: { endpoint: endpoint('user') },
    globalBatch: opts.tasks,
    miniBatch: Math.min(16, opts.tasks),
    rolloutsPerTask: opts.rolloutsPerTask,
    maxTurns: MAX_TURNS,
    epochs: 1,
    learningRate: 1e-3,
    rolloutConcurrency: opts.groupsInFlight,
    gpuTaskQueue: opts.gpuTaskQueue,
  };
}

export type GrpoBenchSpec = ReturnType<typeof specFor>;
