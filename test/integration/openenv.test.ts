import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';
import type { WorldServer } from '../../services/world/server.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import { fixtureTaskId, grpoFixtureScript, insertFixtureTasks } from '../../testkit/grpo-fixture.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { startScriptedWorld } from '../../testkit/world-fixture.js';

const exec = promisify(execFile);
const RUN = 'openenv-fixture';
const PYTHON = path.join(REPO_ROOT, '.venv-openenv', 'bin', 'python');
const TESTS = path.join(REPO_ROOT, 'integrations', 'openenv', 'tests');

interface Played {
  reset: {
    episode_id: string;
    task_id: string;
    messages: { role: string; content: string }[];
    tools: unknown[];
  };
  steps: {
    observation: { messages: { role: string; content: string }[] };
    reward: number | null;
    done: boolean;
  }[];
  state: { episode_id: string; step_count: number; done: boolean };
}

/**
 * The world service as an OpenEnv environment: OpenEnv's own client (`GenericEnvClient`, openenv
 * 0.10.0 in .venv-openenv) plays a task over `/ws`, and TRL's GRPOTrainer trains a tiny local policy
 * two steps against the world through mockworld_openenv's rollout function. The model behind the
 * world (tool simulator, user simulator, judge) is the only double.
 */
describe('the world over OpenEnv', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let world: WorldServer;
  let dir: string;

  const python = async (script: string, args: string[]) => {
    const { stdout } = await exec(PYTHON, [path.join(TESTS, script), ...args], {
      cwd: TESTS,
      maxBuffer: 16 * 1024 * 1024,
      timeout: 600_000,
      env: {
        ...process.env,
        TRL_EXPERIMENTAL_SILENCE: '1',
        HF_DATASETS_OFFLINE: '1',
        HF_HOME: path.join(dir, 'hf'),
      },
    });
    return JSON.parse(stdout.trim().split('\n').at(-1)!) as unknown;
  };
  const worldCalls = () =>
    ['tool-simulator', 'user-simulator', 'judge'].reduce((n, role) => n + models.requestCount(role), 0);

  beforeAll(async () => {
    const venv = exec('bash', [path.join(REPO_ROOT, 'deploy', 'openenv-venv.sh')], { timeout: 900_000 });
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-openenv-'));
    db = await createTestDatabase();
    await insertFixtureTasks(db.url, { synthesisRunId: RUN, count: 2 });
    models = await startModelServer({ script: grpoFixtureScript });
    world = await startScriptedWorld(db.url, models, { ledgerRunId: 'openenv-test' });
    await venv;
  }, 900_000);
  afterAll(async () => {
    await world?.close();
    await models?.close();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("plays a task through OpenEnv's client: tools, the user and the judge's reward, paid once", async () => {
    const task = fixtureTaskId(RUN, 0);
    const played = (await python('play_probe.py', [world.url, task, 'episode-1'])) as Played;
    expect(played.reset.task_id).toBe(task);
    expect(played.reset.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(played.reset.messages[1]!.content).toBe('Please sort out record 0.');
    expect(JSON.stringify(played.reset.tools)).toContain('ask_user');
    const [lookup, asked, final] = played.steps;
    expect(lookup!.observation.messages).toEqual([
      expect.objectContaining({ role: 'tool', content: '{"id":"R-0"}' }),
    ]);
    expect(asked!.observation.messages).toEqual([
      expect.objectContaining({ role: 'tool', content: 'The record id is R-0.' }),
    ]);
    expect([lookup!.done, asked!.done, final!.done]).toEqual([false, false, true]);
    // The fixture judge: no forbidden behaviour, sub-goal 1 always, 2 by the transcript's parity,
    // the interaction never: R = mean(sub-goals, 0) = 0.25 or 0.5.
    expect([0.25, 0.5]).toContain(final!.reward);
    expect(played.state).toMatchObject({ episode_id: 'episode-1', step_count: 3, done: true });
    const [session] = await query<{ status: string }>(db.url, 'SELECT status FROM world_sessions');
    expect(session!.status).toBe('closed');

    // A client that replays the episode (a reconnect, a retried rollout) gets the same answers and
    // pays for no world call again.
    const paid = worldCalls();
    expect(await python('play_probe.py', [world.url, task, 'episode-1'])).toEqual(played);
    expect(worldCalls()).toBe(paid);
  }, 600_000);

  it("trains two TRL GRPOTrainer steps whose rewards are the world judge's", async () => {
    const before = await query<{ n: number }>(
      db.url,
      "SELECT count(*)::int AS n FROM world_sessions WHERE status = 'closed'",
    );
    const trained = (await python('trl_probe.py', [
      world.url,
      path.join(dir, 'trl'),
      fixtureTaskId(RUN, 0),
      fixtureTaskId(RUN, 1),
    ])) as { global_step: number; rewards: number[] };
    expect(trained.global_step).toBe(2);
    expect(trained.rewards).toHaveLength(2);
    for (const reward of trained.rewards) expect(reward).toBeGreaterThanOrEqual(0.25);
    // Each step plays its batch of 2 rollouts as episodes judged and closed in the world.
    const after = await query<{ n: number }>(
      db.url,
      "SELECT count(*)::int AS n FROM world_sessions WHERE status = 'closed'",
    );
    expect(after[0]!.n - before[0]!.n).toBe(4);
  }, 600_000);
});
