import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';
import { runCli } from '../../testkit/cli.js';
import { createTestDatabase, type TestDatabase } from '../../testkit/database.js';
import { startModelServer, type ModelServer } from '../../testkit/model-server.js';
import { scriptedOutcome, scriptedPersonas, synthesisScript } from '../../testkit/synthesis-script.js';
import { startTestWorker, type TestWorker } from '../../testkit/temporal.js';

const exec = promisify(execFile);
const TASKS = 5;

/** Loads the exports with Hugging Face datasets, as a user does, and prints their rows as JSON. */
const LOAD = `
import json, sys
from datasets import load_dataset
out = sys.argv[1]
verl = load_dataset("parquet", data_files=f"{out}/verl.parquet", split="train")
hf = load_dataset(f"{out}/hf", split="train")  # the dataset card's configs name the shards
print(json.dumps({"verl": verl.to_list(), "hf": hf.to_list(), "hf_features": sorted(hf.features)}))
`;

/**
 * Loads verl.parquet with verl's own RLHFDataset (prompt filtering on, through a chat template of
 * a tokenizer built here: nothing is fetched from a hub) and prints what it hands the rollouts.
 */
const RLHF = `
import json, sys
from omegaconf import OmegaConf
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from verl.utils.dataset.rl_dataset import RLHFDataset

words = Tokenizer(models.WordLevel({"[UNK]": 0, "[PAD]": 1}, unk_token="[UNK]"))
words.pre_tokenizer = pre_tokenizers.Whitespace()
tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, unk_token="[UNK]", pad_token="[PAD]")
tokenizer.chat_template = "{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }}\\n{% endfor %}"
config = OmegaConf.create({"prompt_key": "prompt", "max_prompt_length": 8192, "filter_overlong_prompts": True,
                           "filter_overlong_prompts_workers": 1, "cache_dir": sys.argv[2]})
dataset = RLHFDataset(data_files=sys.argv[1], tokenizer=tokenizer, config=config)
keys = ("raw_prompt", "index", "tools_kwargs", "agent_name", "data_source", "reward_model", "extra_info")
print(json.dumps([{k: dataset[i][k] for k in keys} for i in range(len(dataset))]))
`;

type Row = Record<string, any>; // rows read back as JSON

/**
 * The export formats of a real synthesis run (scripted models, real worker and PostgreSQL),
 * written by the CLI and read back with `datasets.load_dataset`: every Parquet row matches its
 * line of tasks.jsonl, the dataset card loads as the folder's config, and sft.jsonl holds each
 * kept demonstration as a chat with its tool calls.
 */
describe('mockworld export --format', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;
  let dir: string;
  let runId: string;
  let venv: Promise<unknown>;
  let verlVenv: Promise<unknown>;

  beforeAll(async () => {
    venv = exec('bash', [path.join(REPO_ROOT, 'deploy', 'datasets-venv.sh')], { timeout: 600_000 });
    venv.catch(() => undefined); // awaited in the test that needs it
    verlVenv = exec('bash', [path.join(REPO_ROOT, 'deploy', 'verl-venv.sh')], { timeout: 900_000 });
    verlVenv.catch(() => undefined);
    dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-export-'));
    await writeFile(path.join(dir, 'personas.jsonl'), scriptedPersonas(TASKS, false));
    db = await createTestDatabase();
    models = await startModelServer({ script: synthesisScript, latencyMs: 5 });
    tw = await startTestWorker(inject('temporalAddress'), db.url);
    const role = { endpoint: { baseUrl: models.url, model: 'scripted' } };
    runId = `export-${Date.now()}`;
    await tw.client.workflow.execute('Synthesis', {
      args: [
        {
          name: 'export',
          personas: { path: path.join(dir, 'personas.jsonl') },
          tasks: TASKS,
          demonstrationsPerTask: 2,
          maxTurns: 6,
          coverageThreshold: 0.5,
          models: { teacher: role, toolSimulator: role, userSimulator: role, rubricExtractor: role },
        },
      ],
      taskQueue: tw.taskQueue,
      workflowId: runId,
    });
  }, 600_000);
  afterAll(async () => {
    await tw?.close();
    await models?.close();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('writes every format, and each Parquet row matches its line of tasks.jsonl', async () => {
    const out = path.join(dir, 'out');
    const cli = await runCli(
      { DATABASE_URL: db.url },
      'export',
      runId,
      '--format',
      'all',
      '--out',
      out,
      '--json',
    );
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    const kept = Array.from({ length: TASKS }, (_, i) => i).filter(
      (i) => scriptedOutcome(i) === 'kept',
    ).length;
    const result = JSON.parse(cli.stdout) as { rows: number; files: Record<string, string> };
    expect(result.rows).toBe(kept);
    expect(Object.keys(result.files).sort()).toEqual(
      [
        'hf/README.md',
        'hf/data/train-00000-of-00001.parquet',
        'sft.jsonl',
        'tasks.jsonl',
        'verl.jsonl',
        'verl.parquet',
      ].sort(),
    );
    const lines = (file: string) =>
      readFile(path.join(out, file), 'utf8').then((text) =>
        text
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as Row),
      );
    const tasks = await lines('tasks.jsonl');
    expect(tasks).toHaveLength(kept);

    await venv;
    const { stdout } = await exec(
      path.join(REPO_ROOT, '.venv-datasets', 'bin', 'python'),
      ['-c', LOAD, out],
      {
        maxBuffer: 64 * 1024 * 1024,
        env: { ...process.env, HF_DATASETS_OFFLINE: '1', HF_HOME: path.join(dir, 'hf-home') },
      },
    );
    const loaded = JSON.parse(stdout) as { verl: Row[]; hf: Row[]; hf_features: string[] };

    expect(loaded.verl).toHaveLength(kept);
    loaded.verl.forEach((row, i) => {
      const task = tasks[i]!;
      expect(row.data_source).toBe(`mockworld/${runId}`);
      expect(row.prompt).toEqual(task.prompt);
      expect(row.ability).toBe('agentic_tool_use');
      expect(row.agent_name).toBe('mockworld_agent');
      expect(row.reward_model.style).toBe('rubric');
      expect(JSON.parse(row.reward_model.ground_truth)).toEqual(task.rubric);
      expect(row.extra_info).toMatchObject({ task_id: task.task_id, run_id: runId, split: 'train' });
      expect(row.extra_info.hidden_context).toBe(task.hidden_context);
      expect(JSON.parse(row.extra_info.tools)).toEqual(task.tools);
      expect(JSON.parse(row.extra_info.rubric)).toEqual(task.rubric);
      expect(Object.keys(JSON.parse(row.extra_info.tools_kwargs))).toEqual(
        task.tools.map((t: Row) => t.function.name),
      );
    });
    expect(loaded.verl.map((row) => row.extra_info.index)).toEqual(
      tasks.map((t) => Number(String(t.task_id).split('task-')[1])),
    );

    expect(loaded.hf_features).toEqual(
      [
        'demonstrations',
        'hidden_context',
        'persona_id',
        'prompt',
        'provenance',
        'rubric',
        'task_id',
        'tools',
        'workflow',
      ].sort(),
    );
    loaded.hf.forEach((row, i) => {
      const task = tasks[i]!;
      expect(row).toMatchObject({
        task_id: task.task_id,
        persona_id: task.persona_id,
        prompt: task.prompt,
        hidden_context: task.hidden_context,
        rubric: task.rubric,
        workflow: task.workflow ?? [],
      });
      expect(JSON.parse(row.tools)).toEqual(task.tools);
      expect(JSON.parse(row.demonstrations)).toEqual(task.demonstrations);
      expect(JSON.parse(row.provenance)).toEqual(task.provenance);
    });

    // The dataset card: what datasets read above, plus the run's provenance.
    const card = await readFile(path.join(out, 'hf', 'README.md'), 'utf8');
    expect(card).toMatch(/^---\n[\s\S]*num_examples: 3\n[\s\S]*---\n/);
    expect(card).toContain('path: data/train-*.parquet');
    expect(card).toContain(`# mockworld ${runId}`);
    expect(card).toMatch(/\| teacher \| `scripted` \| http:\/\/127\.0\.0\.1:\d+\/v1 \|/);
    expect(card).toContain('"coverageThreshold": 0.5');
    expect(card).toContain('"kept": 3');

    // SFT: each kept demonstration once, as the chat it was, with the tools it could call.
    const sft = await lines('sft.jsonl');
    const demonstrations = tasks.flatMap((task) =>
      task.demonstrations.map((d: Row) => ({
        task_id: task.task_id,
        episode_id: d.episode_id,
        messages: d.messages,
      })),
    );
    expect(demonstrations.length).toBeGreaterThan(0);
    expect(sft.map(({ task_id, episode_id, messages }) => ({ task_id, episode_id, messages }))).toEqual(
      demonstrations,
    );
    for (const record of sft)
      expect(record.tools).toEqual(tasks.find((t) => t.task_id === record.task_id)!.tools);
    const turns = sft.flatMap((record) => record.messages as Row[]);
    expect(turns.some((m) => m.role === 'assistant' && m.tool_calls?.length)).toBe(true);
    expect(turns.some((m) => m.role === 'tool' && m.tool_call_id)).toBe(true);
  });

  it("verl's RLHFDataset reads verl.parquet: the prompts, index, agent and reward of each task", async () => {
    const out = path.join(dir, 'verl-only');
    const cli = await runCli(
      { DATABASE_URL: db.url },
      'export',
      runId,
      '--format',
      'jsonl,verl-parquet',
      '--out',
      out,
    );
    expect(cli.code).toBe(0);
    const tasks = (await readFile(path.join(out, 'tasks.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Row);
    await verlVenv;
    const { stdout } = await exec(
      path.join(REPO_ROOT, '.venv-verl', 'bin', 'python'),
      ['-c', RLHF, path.join(out, 'verl.parquet'), path.join(dir, 'verl-cache')],
      {
        maxBuffer: 64 * 1024 * 1024,
        env: {
          ...process.env,
          HF_DATASETS_OFFLINE: '1',
          HF_HUB_OFFLINE: '1',
          HF_HOME: path.join(dir, 'hf-home'),
        },
      },
    );
    // verl prints its own progress lines first; the rows are the last line.
    const rows = JSON.parse(stdout.trim().split('\n').at(-1)!) as Row[];
    expect(rows).toHaveLength(tasks.length);
    rows.forEach((row, i) => {
      const task = tasks[i]!;
      expect(row.raw_prompt).toEqual(task.prompt);
      expect(row.index).toBe(row.extra_info.index);
      expect(row.agent_name).toBe('mockworld_agent');
      expect(row.data_source).toBe(`mockworld/${runId}`);
      expect(JSON.parse(row.reward_model.ground_truth)).toEqual(task.rubric);
      // The adapter's agent loop parses these (JSON: their shape differs from task to task).
      expect(Object.keys(JSON.parse(row.tools_kwargs))).toEqual(task.tools.map((t: Row) => t.function.name));
      expect(JSON.parse(row.extra_info.tools)).toEqual(task.tools);
    });
  }, 900_000);

  it('refuses an unknown format, naming the ones there are', async () => {
    const cli = await runCli({ DATABASE_URL: db.url }, 'export', runId, '--format', 'jsonl,parquet');
    expect(cli.code).toBe(2);
    expect(cli.stderr).toContain('--format takes jsonl, verl-parquet, hf, sft or all');
  });
});
