import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keptTasks } from '../../activities/export/kept-tasks.js';
import { verlParquetRow } from '../../activities/export/layouts.js';
import { VERL_LAYOUT, writeParquet } from '../../activities/export/parquet.js';
import { rubricReward } from '../../activities/reward/index.js';
import { getPool } from '../../activities/store/db.js';
import { agentSystemPrompt, ASK_USER_TOOL } from '../../activities/world/index.js';
import { REPO_ROOT } from '../../deploy/paths.js';
import type { WorldServer } from '../../services/world/server.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { fixtureTaskId, insertFixtureTasks } from '../../testkit/grpo-fixture.js';
import { startModelServer, type ModelServer, type ScriptedRequest } from '../../testkit/model-server.js';
import { startScriptedWorld } from '../../testkit/world-fixture.js';

const exec = promisify(execFile);
const RUN = 'verl-fixture';
const TASK = fixtureTaskId(RUN, 0);
const AUTH = 'verl-world-secret-0123456789';
const PROBE = path.join(REPO_ROOT, 'integrations', 'verl', 'tests', 'agent_loop_probe.py');
const PYTHON = path.join(REPO_ROOT, '.venv-verl', 'bin', 'python');

/** A tool whose schema nests an object and an array: what verl's OpenAIFunctionToolSchema would drop. */
const UPDATE_RECORD_TOOL = {
  type: 'function',
  function: {
    name: 'update_record',
    description: 'Change fields of a record',
    parameters: {
      type: 'object',
      properties: {
        id: { type: 'string' },
        changes: {
          type: 'object',
          properties: {
            state: { type: 'string', enum: ['fixed', 'broken'] },
            notes: { type: 'array', items: { type: 'string' } },
          },
          required: ['state'],
        },
      },
      required: ['id', 'changes'],
    },
  },
};

/** The policy's turns, by how many tool answers its prompt holds: a lookup, a question, a fix, the end. */
const POLICY_TURNS = [
  '<tool_call>{"name": "lookup_record", "arguments": {"id": "R-0"}}</tool_call>',
  '<tool_call>{"name": "ask_user", "arguments": {"question": "Which state should record R-0 have?"}}</tool_call>',
  '<tool_call>{"name": "update_record", "arguments": {"id": "R-0", "changes": {"state": "fixed", "notes": ["asked the user"]}}}</tool_call>',
  'Record R-0 is fixed.',
];
const LOOKUP_ANSWER = '{"id":"R-0","state":"broken"}';
const UPDATE_ANSWER = '{"id":"R-0","state":"fixed"}';
const USER_ANSWER = 'It should be fixed, please.';
const VERDICTS = {
  forbidden: [{ index: 0, violated: false, evidence: '' }],
  subGoals: [
    { index: 0, achieved: true },
    { index: 1, achieved: false },
  ],
  requiredInteractions: [{ index: 0, satisfied: true }],
};

const text = (request: ScriptedRequest) =>
  request.body.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');

interface Segment {
  mask: number;
  text: string;
}
interface Trajectory {
  loop: string;
  prompt_text: string;
  response_length: number;
  mask_length: number;
  segments: Segment[];
  reward_score: number;
  reward_extra_info: Record<string, number>;
  mockworld: { session_id: string; task_id: string; reward: number; problems: string[] };
  score: { score: number; world_session: string };
}

/**
 * mockworld's verl adapter (integrations/verl) in verl 0.9.1 (.venv-verl): verl.parquet rows of a
 * task through verl's RLHFDataset, the `mockworld_agent` loop instantiated from the adapter's YAML
 * as verl's AgentLoopWorker does, two rollouts of one group at once, against the real world service
 * on PostgreSQL; the model (policy, tool simulator, user simulator, judge) is the only double.
 */
describe('the verl adapter', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let world: WorldServer;
  let dir: string;
  let parquet: string;
  let trajectories: Trajectory[];
  let first: { tool: number; user: number; judge: number; policy: number };
  let taskTools: unknown[];

  const probe = async (uid: string, count: number) => {
    const { stdout } = await exec(PYTHON, [PROBE, parquet, uid, String(count), path.join(dir, 'cache')], {
      maxBuffer: 64 * 1024 * 1024,
      timeout: 300_000,
      env: {
        ...process.env,
        MOCKWORLD_WORLD_URL: world.url,
        MOCKWORLD_WORLD_AUTH: AUTH,
        MOCKWORLD_TEST_POLICY_URL: models.url,
        MOCKWORLD_VERL_RUN_ID: 'verl-test',
        HF_DATASETS_OFFLINE: '1',
        HF_HOME: path.join(dir, 'hf-home'),
        RAY_DISABLE_IMPORT_WARNING: '1',
      },
    });
    return JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      row_keys: string[];
      trajectories: Trajectory[];
    };
  };
  const counts = () => ({
    tool: models.requestCount('tool-simulator'),
    user: models.requestCount('user-simulator'),
    judge: models.requestCount('judge'),
    policy: models.requestCount('policy'),
  });

  beforeAll(async () => {
    const venv = exec('bash', [path.join(REPO_ROOT, 'deploy', 'verl-venv.sh')], { timeout: 900_000 });
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-verl-'));
    db = await createTestDatabase();
    await insertFixtureTasks(db.url, { synthesisRunId: RUN, count: 1 });
    const [task] = await query<{ tools: unknown[] }>(db.url, 'SELECT tools FROM tasks WHERE task_id = $1', [
      TASK,
    ]);
    taskTools = [...task!.tools, UPDATE_RECORD_TOOL];
    await query(db.url, 'UPDATE tasks SET tools = $2 WHERE task_id = $1', [TASK, JSON.stringify(taskTools)]);
    // verl.parquet as `mockworld export --format verl-parquet` writes it (same rows, same writer).
    parquet = path.join(dir, 'verl.parquet');
    const context = { runId: RUN, agentSystemPrompt: agentSystemPrompt() };
    async function* rows() {
      for await (const kept of keptTasks(getPool(db.url), RUN)) yield verlParquetRow(kept, context);
    }
    await writeParquet(parquet, VERL_LAYOUT, rows());

    models = await startModelServer({
      script: [
        { role: 'judge', reply: JSON.stringify(VERDICTS) },
        {
          role: 'tool-simulator',
          reply: (request) =>
            JSON.stringify({
              equivalentTo: null,
              response: text(request).includes('update_record') ? UPDATE_ANSWER : LOOKUP_ANSWER,
            }),
        },
        { role: 'user-simulator', reply: USER_ANSWER },
        {
          role: 'policy',
          reply: (request) => POLICY_TURNS[text(request).split('<|tool|>').length - 1] ?? 'Done.',
        },
      ],
      latencyMs: 50, // long enough for the two trajectories' calls to overlap
    });
    world = await startScriptedWorld(db.url, models, { ledgerRunId: 'verl-test', authorization: AUTH });
    await venv;
    const result = await probe('group-0', 2);
    expect(result.row_keys).toEqual(expect.arrayContaining(['raw_prompt', 'extra_info', 'tools_kwargs']));
    trajectories = result.trajectories;
    first = counts();
  }, 900_000);
  afterAll(async () => {
    await world?.close();
    await models?.close();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("runs each row's task tools and ask_user through the world, in the loop the row names", () => {
    expect(trajectories).toHaveLength(2);
    for (const t of trajectories) {
      expect(t.loop).toBe('MockworldAgentLoop');
      const said = t.segments.filter((s) => s.mask === 1).map((s) => s.text);
      const heard = t.segments.filter((s) => s.mask === 0).map((s) => s.text);
      expect(said).toEqual(POLICY_TURNS);
      expect(heard).toHaveLength(3);
      expect(heard[0]).toContain(LOOKUP_ANSWER);
      expect(heard[1]).toContain(USER_ANSWER);
      expect(heard[2]).toContain(UPDATE_ANSWER);
      expect(t.mockworld.problems).toEqual([]);
      expect(t.mockworld.task_id).toBe(TASK);
    }
    expect(trajectories[0]!.mockworld.session_id).not.toBe(trajectories[1]!.mockworld.session_id);
    expect(first.policy).toBe(2 * POLICY_TURNS.length);
    // The same question in the same dialogue of the same task: the world's model cache answers the twin.
    expect(first.user).toBe(1);
  });

  it('masks the world out of the response: tool and user tokens are 0, only the policy is 1', () => {
    for (const t of trajectories) {
      expect(t.mask_length).toBe(t.response_length);
      const heard = t.segments
        .filter((s) => s.mask === 0)
        .map((s) => s.text)
        .join('');
      const said = t.segments
        .filter((s) => s.mask === 1)
        .map((s) => s.text)
        .join('');
      expect(heard).toContain('<|tool|>');
      for (const answer of [LOOKUP_ANSWER, USER_ANSWER, UPDATE_ANSWER]) expect(said).not.toContain(answer);
      expect(said).not.toContain('<|tool|>');
    }
  });

  it("renders the task's own tool schemas, nested parts intact", () => {
    const prompt = trajectories[0]!.prompt_text;
    // The template lists the tools it was given, one JSON object a line.
    const listed = prompt
      .split('<|system|>tools:\n')[1]!
      .split('<|end|>')[0]!
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as unknown);
    expect(listed).toEqual([...taskTools, ASK_USER_TOOL]);
    expect(listed[1]).toEqual(UPDATE_RECORD_TOOL);
    expect(prompt).toContain('<|user|>Please sort out record 0.<|end|>');
  });

  it("scores each trajectory with the judge's verdict under the seed's formula", async () => {
    const expected = rubricReward({
      forbiddenViolated: [false],
      subGoalsAchieved: [true, false],
      interactionsSatisfied: [true],
    }).reward;
    expect(expected).toBe(0.75);
    for (const t of trajectories) {
      expect(t.reward_score).toBe(expected);
      expect(t.score.score).toBe(expected); // compute_score, verl's reward path
      expect(t.reward_extra_info).toEqual({
        world_reward: expected,
        sub_goal_fraction: 0.5,
        interaction_fraction: 1,
        forbidden_violated: 0,
      });
    }
    expect(first.judge).toBe(1); // two identical transcripts: one judge call, the twin from the model cache
    // The judge saw the trajectory as OpenAI messages: the calls with their arguments, each answer by id.
    const judged = await query<{
      messages: Record<string, any>[];
    }> // stored transcripts (JSON)
    (db.url, 'SELECT messages FROM episodes WHERE episode_id = $1', [trajectories[0]!.mockworld.session_id]);
    const messages = judged[0]!.messages;
    expect(messages.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(JSON.parse(messages[6]!.tool_calls[0].function.arguments)).toEqual({
      id: 'R-0',
      changes: { state: 'fixed', notes: ['asked the user'] },
    });
    expect(messages[7]!.tool_call_id).toBe(messages[6]!.tool_calls[0].id);
    expect(messages[8]!.content).toBe(POLICY_TURNS[3]);
  });

  it('answers the same tool call identically for both concurrent trajectories, simulating it once', () => {
    const [a, b] = trajectories.map((t) => t.segments.filter((s) => s.mask === 0).map((s) => s.text));
    expect(a).toEqual(b);
    expect(first.tool).toBe(2); // lookup_record once, update_record once, for both trajectories
  });

  it('replays a trajectory (same run, uid and slot) from the stored answers, paying no world model twice', async () => {
    const again = await probe('group-0', 1);
    const now = counts();
    expect(now.tool).toBe(first.tool);
    expect(now.user).toBe(first.user);
    expect(now.judge).toBe(first.judge);
    expect(now.policy).toBe(first.policy + POLICY_TURNS.length); // the policy is verl's, not the world's
    expect(again.trajectories[0]!.mockworld.session_id).toBe(trajectories[0]!.mockworld.session_id);
    expect(again.trajectories[0]!.reward_score).toBe(trajectories[0]!.reward_score);
  }, 300_000);
});
