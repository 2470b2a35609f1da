import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { canonicalJson, createModelClient } from '../../activities/llm/index.js';
import { getPool } from '../../activities/store/db.js';
import { judgeEpisode } from '../../activities/reward/index.js';
import { createTestDatabase, query, type TestDatabase } from '../../testkit/database.js';
import {
  startModelServer,
  type ModelServer,
  type Reply,
  type ScriptedRequest,
} from '../../testkit/model-server.js';
import { startTestWorker, type TestWorker } from '../../testkit/temporal.js';
import { tableNames } from '../badinput/db-snapshot.js';

/**
 * One small pipeline run, used twice: (a) an API key that lives only in the workers' environment
 * must appear nowhere in any workflow history or database column afterwards; (b) SQL injection
 * strings fed through every text field that reaches PostgreSQL (persona ids and texts, the run id,
 * task texts, every model output) must come back verbatim, with every table still there.
 */

/** The key's variable and a distinctive value (the scan looks for this exact text). */
const KEY_ENV = `MW_SECURITY_TEST_KEY_${randomBytes(3).toString('hex').toUpperCase()}`;
const SECRET = `sk-mwtest-${randomBytes(24).toString('hex')}`;

/** What SQL built by string concatenation would choke on (or obey). */
const INJECTIONS = [
  "'); DROP TABLE tasks; --",
  "\\' OR 1=1 --",
  '$1 $2::text $$ $tag$',
  '"; DROP TABLE runs; --',
  'back\\slash \\\\ \\x00 \\n',
  "E'\\'' || pg_sleep(10) --",
  '%s %I %L {0} ${x}',
  '/* c */ -- line',
  'ünïcødé 日本語 🙂 \u202eRTL\u202c zero\u200bwidth',
];
/** Every injection in one text: what each model output field carries. */
const ALL = INJECTIONS.join(' | ');
const PERSONAS = 2;
const personaId = (i: number) => `${INJECTIONS[i]}#${i}`;
const personaText = (i: number) => `Persona ${i}: ${ALL}`;
/** A marker the history scan must find (proves it reads payload bytes). */
const PROMPT_MARKER = `prompt-marker-${randomBytes(6).toString('hex')}`;

const HISTORY = proto.temporal.api.history.v1.History;

const tool = (name: string) => ({
  type: 'function',
  function: {
    name,
    description: `${name}: ${ALL}`,
    parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  },
});

const turnOf = (r: ScriptedRequest) => r.body.messages.filter((m) => m.role === 'assistant').length;
const json = (value: unknown): Reply => JSON.stringify(value);

/** Every role of the pipeline answers with injection strings in every free-text field. */
function hostileScript(request: ScriptedRequest): Reply {
  const schema = request.body.response_format?.json_schema?.name;
  switch (request.role) {
    case 'teacher':
      if (schema === 'toolset')
        return json({
          scenario: ALL,
          workflow: [ALL, ALL],
          tools: [tool('lookup_record')],
          forbidden: [ALL],
          request: ALL,
        });
      if (schema === 'refine')
        return json({
          tools: [tool('lookup_record')],
          removed: [{ name: ALL, reason: ALL }],
          distractors: [],
        });
      if (schema === 'instruction') return json({ instruction: ALL, hiddenContext: ALL });
      return [
        { content: ALL, toolCalls: [{ name: 'ask_user', arguments: { question: ALL } }] },
        { toolCalls: [{ name: 'lookup_record', arguments: { id: ALL } }] },
        ALL,
      ][Math.min(turnOf(request), 2)]!;
    case 'tool-simulator':
      return json({ equivalentTo: null, response: JSON.stringify({ record: ALL }) });
    case 'user-simulator':
      return ALL;
    case 'coverage-judge':
      return json({ steps: [0, 1].map((index) => ({ index, executed: true, evidence: ALL })) });
    case 'coverage-judge-control':
      return json({ steps: [0, 1].map((index) => ({ index, executed: false, evidence: '' })) });
    case 'rubric-extractor':
      return json({ subGoals: [ALL], requiredInteractions: [ALL] });
    case 'judge':
      return json({
        forbidden: [{ index: 0, violated: false, evidence: ALL }],
        subGoals: [{ index: 0, achieved: true }],
        requiredInteractions: [{ index: 0, satisfied: true }],
      });
    case 'smoke':
      return `hello ${ALL}`;
    default:
      throw new Error(`unscripted role ${request.role}`);
  }
}

/** Every run (continue-as-new chain included) of a workflow, from its first run. */
async function historiesOf(client: Client, workflowId: string, firstRunId?: string) {
  const histories: Uint8Array[] = [];
  let runId = firstRunId ?? (await client.workflow.getHandle(workflowId).describe()).runId;
  for (;;) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    histories.push(HISTORY.encode(history).finish());
    const next = history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
    if (!next) return histories;
    runId = next;
  }
}

/** Where `needle` occurs in a binary history: the payload bytes are raw UTF-8 in the protobuf. */
const contains = (bytes: Uint8Array, needle: string) =>
  Buffer.from(bytes).includes(Buffer.from(needle, 'utf8'));

describe('a small pipeline run with a keyed endpoint and hostile strings everywhere', () => {
  let db: TestDatabase;
  let models: ModelServer;
  let tw: TestWorker;
  let home: string;
  let tablesBefore: string[];
  const runId = `sec/../../${INJECTIONS[0]} ${INJECTIONS[1]} $1 \\ ü-${Date.now()}`;
  const workflows: Array<{ id: string; firstRunId?: string }> = [];

  beforeAll(async () => {
    home = await mkdtemp(path.join(os.tmpdir(), 'mockworld-security-'));
    models = await startModelServer({ script: hostileScript });
    // The key exists only here, in the workers' environment; the spec names the variable.
    process.env[KEY_ENV] = SECRET;
    process.env.MOCKWORLD_HOME = home;
    // Roles without an endpoint use the worker default, keyed the same way.
    process.env.MOCKWORLD_MODEL_URL = models.url;
    process.env.MOCKWORLD_MODEL_NAME = 'default-model';
    process.env.MOCKWORLD_MODEL_KEY_ENV = KEY_ENV;
    db = await createTestDatabase('mw_security');
    tablesBefore = await tableNames(db.url, true);
    tw = await startTestWorker(inject('temporalAddress'), db.url);

    const personasFile = path.join(home, `personas ${INJECTIONS[3]}.jsonl`);
    await writeFile(
      personasFile,
      Array.from({ length: PERSONAS }, (_, i) =>
        JSON.stringify({ id: personaId(i), persona: personaText(i) }),
      ).join('\n'),
    );
    const endpoint = { baseUrl: models.url, model: 'keyed-model', apiKeyEnv: KEY_ENV };
    const role = { endpoint };
    const synthesis = await tw.client.workflow.start('Synthesis', {
      args: [
        {
          name: 'security',
          personas: { path: personasFile },
          tasks: PERSONAS,
          demonstrationsPerTask: 1,
          maxTurns: 4,
          concurrency: 3,
          tasksPerWorkflowRun: 1, // one continue-as-new: its new run is scanned too
          refine: { removeSelfSolvable: true, makeSimulable: false, distractors: 0 },
          models: {
            teacher: role,
            toolSimulator: role,
            userSimulator: { sampling: { maxTokens: 64 } },
            rubricExtractor: role,
          },
        },
      ],
      taskQueue: tw.taskQueue,
      workflowId: runId,
    });
    workflows.push({ id: runId, firstRunId: synthesis.firstExecutionRunId });
    // Smoke on the worker's default endpoint: one that completes, one whose endpoint refuses it.
    const smoke = (suffix: string) =>
      tw.client.workflow.start('Smoke', {
        args: [{ kind: 'Smoke', prompt: `${PROMPT_MARKER} ${suffix} ${ALL}`, steps: 2 }],
        taskQueue: tw.taskQueue,
        workflowId: `sec-smoke-${suffix}-${Date.now()}`,
      });
    const ok = await smoke('ok');
    workflows.push({ id: ok.workflowId });
    expect(await ok.result()).toMatchObject({ steps: 2 });
    models.injectFaults({ kind: 'bad-request', role: 'smoke' });
    const refused = await smoke('refused');
    workflows.push({ id: refused.workflowId });
    expect(await refused.result().catch((e: unknown) => e)).toBeInstanceOf(WorkflowFailedError);

    expect(await synthesis.result()).toMatchObject({ tasks: PERSONAS, kept: PERSONAS, failed: 0 });
    for (let i = 0; i < PERSONAS; i++) workflows.push({ id: `${runId}-task-${String(i).padStart(5, '0')}` });

    // The judge (GRPO's reward) on one kept demonstration, through the same model layer.
    const [episode] = await query<{ episode_id: string; task_id: string }>(
      db.url,
      'SELECT episode_id, task_id FROM episodes ORDER BY episode_id LIMIT 1',
    );
    await judgeEpisode(
      { pool: getPool(db.url), models: createModelClient({ databaseUrl: db.url }) },
      { episodeId: episode!.episode_id, taskId: episode!.task_id, judge: { endpoint }, runId },
    );
  });
  afterAll(async () => {
    await tw?.close();
    await models?.close();
    await db?.drop();
    await rm(home, { recursive: true, force: true });
    delete process.env[KEY_ENV];
  });

  describe('API keys', () => {
    it('reached the endpoint on every request (the scans below look for a key that was in use)', () => {
      expect(models.requests.length).toBeGreaterThan(12);
      for (const request of models.requests) expect(request.authorization).toBe(`Bearer ${SECRET}`);
      expect(new Set(models.requests.map((r) => r.body.model))).toEqual(
        new Set(['keyed-model', 'default-model']),
      );
    });

    it('appear in no workflow history of the run: dataset runs, task workflows, smoke runs, a failed run', async () => {
      let scanned = 0;
      let markerSeen = false;
      for (const { id, firstRunId } of workflows) {
        const histories = await historiesOf(tw.client, id, firstRunId);
        if (id === runId) expect(histories.length).toBe(2); // the continued-as-new run too
        for (const bytes of histories) {
          scanned++;
          expect(contains(bytes, SECRET), id).toBe(false);
          expect(contains(bytes, Buffer.from(SECRET).toString('base64')), id).toBe(false);
          markerSeen ||= contains(bytes, PROMPT_MARKER);
        }
      }
      expect(scanned).toBe(PERSONAS + 4);
      expect(markerSeen).toBe(true); // the scan does see payload contents
    });

    it('appear in no text or json column of any table', async () => {
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        const { rows: columns } = await client.query<{ table_name: string; column_name: string }>(
          `SELECT table_name, column_name FROM information_schema.columns
            WHERE table_schema = 'public' AND data_type IN ('text', 'character varying', 'character', 'json', 'jsonb')
            ORDER BY 1, 2`,
        );
        const tables = new Set(columns.map((c) => c.table_name));
        expect(tables).toEqual(new Set(await tableNames(db.url, true)));
        const hits = async (needle: string) => {
          const found: string[] = [];
          for (const { table_name: table, column_name: column } of columns) {
            const { rows } = await client.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM "${table}" WHERE strpos("${column}"::text, $1) > 0`,
              [needle],
            );
            if (rows[0]!.n > 0) found.push(`${table}.${column}`);
          }
          return found;
        };
        expect(await hits(SECRET)).toEqual([]);
        expect(await hits(KEY_ENV)).toEqual(expect.arrayContaining(['runs.spec'])); // the name, by design
        expect(await hits(PROMPT_MARKER)).toEqual(['runs.spec']); // the scan does find stored text
        expect(await hits(personaText(1))).toEqual(expect.arrayContaining(['synthesis_personas.persona']));
      } finally {
        await client.end();
      }
    });

    it('appear in no file the run wrote', async () => {
      const files = (await readdir(home, { recursive: true, withFileTypes: true })).filter((f) => f.isFile());
      expect(files.map((f) => f.name)).toEqual(expect.arrayContaining(['tasks.jsonl', 'verl.jsonl']));
      for (const file of files) {
        const text = await readFile(path.join(file.parentPath, file.name), 'utf8');
        expect(text, file.name).not.toContain(SECRET);
      }
    });
  });

  describe('SQL injection strings', () => {
    it('come back verbatim from every table they were written to', async () => {
      const personas = await query<{ idx: number; persona_id: string; persona: string }>(
        db.url,
        'SELECT idx, persona_id, persona FROM synthesis_personas WHERE run_id = $1 ORDER BY idx',
        [runId],
      );
      expect(personas).toEqual(
        Array.from({ length: PERSONAS }, (_, i) => ({
          idx: i,
          persona_id: personaId(i),
          persona: personaText(i),
        })),
      );
      const [run] = await query<{ run_id: string; status: string; spec: { personas: { path: string } } }>(
        db.url,
        'SELECT run_id, status, spec FROM runs WHERE run_id = $1',
        [runId],
      );
      expect(run).toMatchObject({ run_id: runId, status: 'completed' });
      expect(run!.spec.personas.path).toContain(INJECTIONS[3]);

      const tasks = await query<Record<string, unknown>>(
        db.url,
        'SELECT * FROM tasks WHERE run_id = $1 ORDER BY idx',
        [runId],
      );
      expect(tasks).toHaveLength(PERSONAS);
      for (const [i, task] of tasks.entries()) {
        expect(task).toMatchObject({
          task_id: `${runId}-task-${String(i).padStart(5, '0')}`,
          persona_id: personaId(i),
          stage: 'kept',
          scenario: ALL,
          request: ALL,
          instruction: ALL,
          hidden_context: ALL,
          workflow: [ALL, ALL],
          forbidden: [ALL],
          rubric: { forbidden: [ALL], subGoals: [ALL], requiredInteractions: [ALL] },
          refinement: { removed: [{ name: ALL, reason: ALL }] },
        });
        expect((task.tools as Array<{ function: { description: string } }>)[0]!.function.description).toBe(
          `lookup_record: ${ALL}`,
        );
      }

      const mappings = await query<{ task_id: string; args: unknown; response: unknown }>(
        db.url,
        'SELECT task_id, args, response FROM tool_mappings ORDER BY task_id',
      );
      expect(mappings).toHaveLength(PERSONAS);
      for (const m of mappings) expect(m).toMatchObject({ args: { id: ALL }, response: { record: ALL } });

      const episodes = await query<{ messages: Array<{ role: string; content: string | null }> }>(
        db.url,
        `SELECT messages FROM episodes WHERE task_id LIKE $1`,
        [`${runId.replace(/[\\%_]/g, '\\$&')}-task-%`],
      );
      expect(episodes).toHaveLength(PERSONAS);
      for (const { messages } of episodes) {
        expect(messages.map((m) => m.content)).toEqual([
          expect.any(String), // the system prompt
          ALL, // the instruction
          ALL, // the agent's text beside its question
          ALL, // the user's answer
          null,
          canonicalJson({ record: ALL }),
          ALL, // the final answer
        ]);
      }
      const [judgement] = await query<{
        run_id: string;
        verdicts: { forbidden: Array<{ evidence: string }> };
      }>(db.url, 'SELECT run_id, verdicts FROM judgements');
      expect(judgement!.run_id).toBe(runId);
      expect(judgement!.verdicts.forbidden[0]!.evidence).toBe(ALL);
      const answers = await query<{ n: number }>(
        db.url,
        `SELECT count(*)::int AS n FROM llm_calls WHERE response -> 'message' ->> 'content' = $1`,
        [ALL],
      );
      expect(answers[0]!.n).toBeGreaterThan(0);
    });

    it('dropped, truncated or escaped out of nothing: every table is still there, with the rows the run wrote', async () => {
      expect(await tableNames(db.url, true)).toEqual(tablesBefore);
      const counts = await query<{ runs: number; tasks: number; episodes: number }>(
        db.url,
        `SELECT (SELECT count(*)::int FROM runs) AS runs, (SELECT count(*)::int FROM tasks) AS tasks,
                (SELECT count(*)::int FROM episodes) AS episodes`,
      );
      expect(counts[0]).toEqual({ runs: 3, tasks: PERSONAS, episodes: PERSONAS });
    });

    it('kept a run id full of path characters from placing the dataset outside the datasets folder', async () => {
      const [run] = await query<{ summary: { dataset: { directory: string; rows: number } } }>(
        db.url,
        'SELECT summary FROM runs WHERE run_id = $1',
        [runId],
      );
      const directory = run!.summary.dataset.directory;
      expect(path.dirname(directory)).toBe(path.join(home, 'datasets'));
      expect(run!.summary.dataset.rows).toBe(PERSONAS);
      const exported = (await readFile(path.join(directory, 'tasks.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(exported.map((t) => t.persona_id)).toEqual(
        Array.from({ length: PERSONAS }, (_, i) => personaId(i)),
      );
      expect(exported[0].hidden_context).toBe(ALL);
    });
  });
});
