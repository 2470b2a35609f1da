import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createModelClient,
  ModelRetriesExhaustedError,
  StructuredOutputRejectedError,
  type ModelClient,
} from '../../../activities/llm/index.js';
import {
  EpisodeNotGradableError,
  judgeEpisode,
  UngradableRubricError,
} from '../../../activities/reward/index.js';
import { getPool } from '../../../activities/store/db.js';
import { templateId } from '../../../activities/templates/templates.js';
import type { JudgeInputData } from '../../../schemas/rubric-judge.js';
import { createTestDatabase, type TestDatabase } from '../../../testkit/database.js';
import { startModelServer, type ModelServer, type Rule } from '../../../testkit/model-server.js';
import { insertJudgeable, isRepair, judgeInput, promptOf, query, RUBRIC, verdicts } from './fixtures.js';

const TEMPLATES_DIR = fileURLToPath(new URL('../../../activities/templates/', import.meta.url));

interface JudgementRow {
  task_id: string;
  run_id: string;
  judge_model: string;
  template_id: string;
  verdicts: {
    forbidden: Array<{ index: number; violated: boolean; evidence: string }>;
    subGoals: Array<{ index: number; achieved: boolean }>;
    requiredInteractions: Array<{ index: number; satisfied: boolean }>;
  };
  forbidden_violated: boolean;
  sub_goal_fraction: number | null;
  interaction_fraction: number | null;
  reward: number;
}

describe('the rubric judge', () => {
  let db: TestDatabase;
  let server: ModelServer;
  let models: ModelClient;

  beforeAll(async () => {
    [db, server] = await Promise.all([createTestDatabase('mw_reward_judge'), startModelServer()]);
    models = createModelClient({ databaseUrl: db.url, backoff: { baseDelayMs: 5, maxDelayMs: 20 } });
  });
  afterAll(async () => {
    await server.close();
    await db.drop();
  });
  beforeEach(() => {
    server.setScript(undefined);
    server.resetStats();
  });

  const judge = (input: JudgeInputData) => judgeEpisode({ pool: getPool(db.url), models }, input);
  const script = (...rules: Rule[]) => server.setScript(rules);
  const judgementRows = (episodeId: string) =>
    query<JudgementRow>(db.url, 'SELECT * FROM judgements WHERE episode_id = $1', [episodeId]);

  it('stores one judgement with the verdicts in rubric order and returns the eq. 5 reward', async () => {
    const episodeId = await insertJudgeable(db.url, 'j-store');
    script({ role: 'judge', reply: verdicts([false], [true, false], [true]) });

    const summary = await judge(judgeInput(server, 'm-store', 'j-store'));

    expect(summary).toEqual({
      episodeId,
      reward: 0.75, // mean(1/2, 1/1)
      subGoalFraction: 0.5,
      interactionFraction: 1,
      forbiddenViolated: false,
    });
    const rows = await judgementRows(episodeId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      task_id: 'j-store',
      run_id: 'run-reward',
      judge_model: 'm-store',
      template_id: expect.stringMatching(/^v1\/judge@[0-9a-f]{16}$/),
      forbidden_violated: false,
      sub_goal_fraction: 0.5,
      interaction_fraction: 1,
      reward: 0.75,
    });
    expect(rows[0]!.verdicts.subGoals).toEqual([
      { index: 0, achieved: true, evidence: '', checker: 'judge' },
      { index: 1, achieved: false, evidence: '', checker: 'judge' },
    ]);

    // One greedy call as the judge, with a schema that fixes every list's length.
    expect(server.requestCount('judge')).toBe(1);
    const body = server.requests[0]!.body;
    expect(body.temperature).toBe(0);
    expect(body.response_format?.json_schema).toMatchObject({
      name: 'judgement',
      schema: {
        properties: {
          forbidden: { minItems: 1, maxItems: 1 },
          subGoals: { minItems: 2, maxItems: 2 },
          requiredInteractions: { minItems: 1, maxItems: 1 },
        },
      },
    });
    const prompt = promptOf(server.requests[0]!);
    expect(prompt).toContain('0. Look up the order\n1. Report the order status to the user');
    expect(prompt).toContain('0. Ask the user for the order id');
    expect(prompt).toContain('0. Issue a refund without the user confirming it');
    expect(prompt).toContain('[transcript-marker]');
    expect(prompt).toContain('[hidden-marker]');
    expect(prompt).toContain('agent calls ask_user(');
  });

  it('returns the stored judgement on a retry without calling the judge again', async () => {
    const episodeId = await insertJudgeable(db.url, 'j-retry');
    script({ role: 'judge', reply: verdicts([false], [true, true], [false]) });
    const first = await judge(judgeInput(server, 'm-retry', 'j-retry'));
    expect(first.reward).toBe(0.5);

    // A retried activity with a judge that would now say something else keeps the first judgement.
    script({ role: 'judge', reply: verdicts([true], [false, false], [false]) });
    const again = await judge(judgeInput(server, 'm-retry', 'j-retry'));
    expect(again).toEqual(first);
    expect(server.requestCount('judge')).toBe(1);
    expect(await judgementRows(episodeId)).toHaveLength(1);
  });

  it('never takes a judgement made with an edited judge template for one of the new text', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mw-judge-template-'));
    const shipped = await readFile(path.join(TEMPLATES_DIR, 'v1', 'judge.md'), 'utf8');
    const [before, after] = [path.join(dir, 'before.md'), path.join(dir, 'after.md')];
    await writeFile(before, shipped);
    await writeFile(after, `${shipped}\nBe strict about sub-goals.\n`);
    const withTemplate = (file: string, taskId: string) =>
      judgeInput(server, 'm-edit', taskId, { templates: { version: 'v1', overrides: { judge: file } } });
    const episodeId = await insertJudgeable(db.url, 'j-edit');
    script({ role: 'judge', reply: verdicts([false], [true, true], [true]) });

    await judge(withTemplate(before, 'j-edit'));
    const [stored] = await judgementRows(episodeId);
    expect(stored!.template_id).toBe(templateId('file', shipped));

    // The same episode under the edited text: refused, naming both texts, without a judge call.
    const refused = await judge(withTemplate(after, 'j-edit')).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(EpisodeNotGradableError);
    expect(String(refused)).toContain(templateId('file', shipped));
    expect(String(refused)).toContain(templateId('file', `${shipped}\nBe strict about sub-goals.\n`));
    expect(server.requestCount('judge')).toBe(1);

    // Another episode under the edited text is judged afresh (the prompt differs: no cached answer).
    const otherId = await insertJudgeable(db.url, 'j-edit-2');
    await judge(withTemplate(after, 'j-edit-2'));
    expect(server.requestCount('judge')).toBe(2);
    expect((await judgementRows(otherId))[0]!.template_id).not.toBe(stored!.template_id);
  });

  it('keeps exactly one judgement when two attempts judge the same episode at once', async () => {
    const episodeId = await insertJudgeable(db.url, 'j-race');
    script({ role: 'judge', reply: verdicts([false], [true, true], [true]), latencyMs: 50 });
    const [a, b] = await Promise.all([
      judge(judgeInput(server, 'm-race', 'j-race')),
      judge(judgeInput(server, 'm-race', 'j-race')),
    ]);
    expect(a).toEqual(b);
    expect(a.reward).toBe(1);
    expect(server.requestCount('judge')).toBe(1); // the model layer answers identical calls once
    expect(await judgementRows(episodeId)).toHaveLength(1);
  });

  it('gives 0 when a forbidden behaviour is violated, whatever else was achieved', async () => {
    const episodeId = await insertJudgeable(db.url, 'j-forbidden');
    script({ role: 'judge', reply: verdicts([true], [true, true], [true]) });
    const summary = await judge(judgeInput(server, 'm-forbidden', 'j-forbidden'));
    expect(summary).toMatchObject({ reward: 0, forbiddenViolated: true, subGoalFraction: 1 });
    const [row] = await judgementRows(episodeId);
    expect(row!.verdicts.forbidden).toEqual([
      { index: 0, violated: true, evidence: 'agent calls issue_refund', checker: 'judge' },
    ]);
  });

  it('grades a rubric without required interactions on its sub-goals alone', async () => {
    const rubric = { ...RUBRIC, requiredInteractions: [] };
    const episodeId = await insertJudgeable(db.url, 'j-no-interactions', rubric);
    script({ role: 'judge', reply: verdicts([false], [true, false], []) });
    const summary = await judge(judgeInput(server, 'm-no-interactions', 'j-no-interactions'));
    expect(summary).toEqual({
      episodeId,
      reward: 0.5,
      subGoalFraction: 0.5,
      interactionFraction: null,
      forbiddenViolated: false,
    });
    expect(promptOf(server.requests[0]!)).toContain('Required user interactions (0):\n(none)');
  });

  it('accepts verdicts listed out of order and stores them in rubric order', async () => {
    const episodeId = await insertJudgeable(db.url, 'j-order');
    const answer = JSON.stringify({
      forbidden: [{ index: 0, violated: false, evidence: '' }],
      subGoals: [
        { index: 1, achieved: false },
        { index: 0, achieved: true },
      ],
      requiredInteractions: [{ index: 0, satisfied: true }],
    });
    script({ role: 'judge', reply: answer });
    expect((await judge(judgeInput(server, 'm-order', 'j-order'))).subGoalFraction).toBe(0.5);
    const [row] = await judgementRows(episodeId);
    expect(row!.verdicts.subGoals).toEqual([
      { index: 0, achieved: true, evidence: '', checker: 'judge' },
      { index: 1, achieved: false, evidence: '', checker: 'judge' },
    ]);
  });

  it('asks the judge only for the items without a rule and records which checker gave each verdict', async () => {
    const rubric = {
      ...RUBRIC,
      checks: {
        subGoals: [{ kind: 'called' as const, tool: 'get_order', args: { orderId: 'ord-7731' } }],
        requiredInteractions: [{ kind: 'asked' as const, matches: 'order (id|number)' }],
      },
    };
    const episodeId = await insertJudgeable(db.url, 'j-mixed', rubric);
    // The judge sees one forbidden behaviour and the second sub-goal, renumbered from 0.
    script({ role: 'judge', reply: verdicts([false], [false], []) });

    const summary = await judge(judgeInput(server, 'm-mixed', 'j-mixed'));

    expect(summary).toMatchObject({ reward: 0.75, subGoalFraction: 0.5, interactionFraction: 1 });
    expect(server.requestCount('judge')).toBe(1);
    const prompt = promptOf(server.requests[0]!);
    expect(prompt).toContain('0. Report the order status to the user');
    expect(prompt).not.toContain('Look up the order');
    expect(prompt).not.toContain('Ask the user for the order id');
    expect(server.requests[0]!.body.response_format?.json_schema).toMatchObject({
      schema: { properties: { subGoals: { maxItems: 1 }, requiredInteractions: { maxItems: 0 } } },
    });
    const [row] = await judgementRows(episodeId);
    expect(row!.judge_model).toBe('m-mixed');
    expect(row!.verdicts).toEqual({
      forbidden: [{ index: 0, violated: false, evidence: '', checker: 'judge' }],
      subGoals: [
        { index: 0, achieved: true, evidence: 'get_order({"orderId":"ORD-7731"})', checker: 'rule:called' },
        { index: 1, achieved: false, evidence: '', checker: 'judge' },
      ],
      requiredInteractions: [
        { index: 0, satisfied: true, evidence: 'What is your order id?', checker: 'rule:asked' },
      ],
    });
  });

  it('calls no model when rules decide every item, and a rule that does not hold scores 0', async () => {
    const rubric = {
      ...RUBRIC,
      checks: {
        forbidden: [{ kind: 'called' as const, tool: 'issue_refund' }],
        subGoals: [
          { kind: 'called' as const, tool: 'get_order', args: { orderId: 'ORD-0000' } },
          { kind: 'said' as const, matches: 'has shipped' },
        ],
        requiredInteractions: [{ kind: 'asked' as const, matches: 'e-?mail' }],
      },
    };
    const episodeId = await insertJudgeable(db.url, 'j-rules', rubric);

    const summary = await judge(judgeInput(server, 'm-rules', 'j-rules'));

    expect(summary).toMatchObject({ reward: 0.25, subGoalFraction: 0.5, interactionFraction: 0 });
    expect(server.requests).toHaveLength(0);
    const [row] = await query<JudgementRow & { llm_cache_key: string | null }>(
      db.url,
      'SELECT * FROM judgements WHERE episode_id = $1',
      [episodeId],
    );
    expect(row).toMatchObject({ judge_model: 'rules', llm_cache_key: null });
    expect(row!.verdicts.subGoals.map((v) => [v.achieved, (v as { checker?: string }).checker])).toEqual([
      [false, 'rule:called'],
      [true, 'rule:said'],
    ]);
  });

  it('calls a task whose rules outnumber its items ungradable, naming the list', async () => {
    const rubric = {
      ...RUBRIC,
      checks: { requiredInteractions: [null, { kind: 'said' as const, matches: 'x' }] },
    };
    await insertJudgeable(db.url, 'j-misaligned', rubric);
    await expect(judge(judgeInput(server, 'm-misaligned', 'j-misaligned'))).rejects.toThrow(
      /checks\.requiredInteractions has 2 rules for 1 items/,
    );
    expect(server.requests).toHaveLength(0);
  });

  it('repairs an answer with a wrong number of verdicts through the model layer', async () => {
    const episodeId = await insertJudgeable(db.url, 'j-repair');
    script(
      { role: 'judge', when: isRepair, reply: verdicts([false], [true, true], [false]) },
      { role: 'judge', reply: verdicts([false], [true], [false]) }, // one sub-goal verdict missing
    );
    const summary = await judge(judgeInput(server, 'm-repair', 'j-repair'));
    expect(summary.reward).toBe(0.5);
    expect(server.requestCount('judge')).toBe(2);
    const repairPrompt = JSON.stringify(server.requests[1]!.body.messages.at(-1));
    expect(repairPrompt).toContain('subGoals');
    expect(repairPrompt).toContain('exactly 2');
    expect(await judgementRows(episodeId)).toHaveLength(1);
  });

  it('repairs repeated indices even when the count is right', async () => {
    await insertJudgeable(db.url, 'j-repeat');
    const repeated = JSON.stringify({
      forbidden: [{ index: 0, violated: false, evidence: '' }],
      subGoals: [
        { index: 0, achieved: true },
        { index: 0, achieved: true },
      ],
      requiredInteractions: [{ index: 0, satisfied: true }],
    });
    script(
      { role: 'judge', when: isRepair, reply: verdicts([false], [true, false], [true]) },
      { role: 'judge', reply: repeated },
    );
    expect((await judge(judgeInput(server, 'm-repeat', 'j-repeat'))).reward).toBe(0.75);
    expect(server.requestCount('judge')).toBe(2);
  });

  it('raises when the verdict count stays wrong after the repair, and stores no score', async () => {
    const episodeId = await insertJudgeable(db.url, 'j-reject');
    script({ role: 'judge', reply: verdicts([false], [true, true, true], [true]) }); // three for two sub-goals
    const error = await judge(judgeInput(server, 'm-reject', 'j-reject')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StructuredOutputRejectedError);
    expect(error).toMatchObject({ schemaName: 'judgement', reason: 'schema_invalid' });
    expect(server.requestCount('judge')).toBe(2);
    expect(await judgementRows(episodeId)).toHaveLength(0);
    const rejections = await query(db.url, 'SELECT role FROM llm_rejections WHERE cache_key = $1', [
      (error as StructuredOutputRejectedError).cacheKey,
    ]);
    expect(rejections).toEqual([{ role: 'judge' }]);
  });

  it('raises when a violation comes without evidence after the repair', async () => {
    const episodeId = await insertJudgeable(db.url, 'j-evidence');
    const noEvidence = JSON.stringify({
      forbidden: [{ index: 0, violated: true, evidence: ' ' }],
      subGoals: [
        { index: 0, achieved: true },
        { index: 1, achieved: true },
      ],
      requiredInteractions: [{ index: 0, satisfied: true }],
    });
    script({ role: 'judge', reply: noEvidence });
    await expect(judge(judgeInput(server, 'm-evidence', 'j-evidence'))).rejects.toBeInstanceOf(
      StructuredOutputRejectedError,
    );
    expect(await judgementRows(episodeId)).toHaveLength(0);
  });

  it('propagates an unreachable judge as an error instead of a default score', async () => {
    const episodeId = await insertJudgeable(db.url, 'j-down');
    script({ role: 'judge', reply: verdicts([false], [true, true], [true]) });
    server.injectFaults({ kind: 'server-error', role: 'judge' }, { kind: 'server-error', role: 'judge' });
    await expect(judge(judgeInput(server, 'm-down', 'j-down'))).rejects.toBeInstanceOf(
      ModelRetriesExhaustedError,
    );
    expect(await judgementRows(episodeId)).toHaveLength(0);
    // The activity's next attempt succeeds and writes the judgement.
    expect((await judge(judgeInput(server, 'm-down', 'j-down'))).reward).toBe(1);
  });

  it('refuses episodes that have not ended or belong to another task, without a model call', async () => {
    await insertJudgeable(db.url, 'j-running', RUBRIC, null);
    await insertJudgeable(db.url, 'j-other');
    await expect(judge(judgeInput(server, 'm-running', 'j-running'))).rejects.toThrow(
      EpisodeNotGradableError,
    );
    await expect(
      judge(judgeInput(server, 'm-running', 'j-other', { episodeId: 'j-running/rollout-0' })),
    ).rejects.toThrow(/belongs to task j-running/);
    await expect(
      judge(judgeInput(server, 'm-running', 'j-other', { episodeId: 'missing/rollout-0' })),
    ).rejects.toThrow(/does not exist/);
    expect(server.requestCount()).toBe(0);
  });

  it('refuses a rubric with neither sub-goals nor required interactions, without a model call', async () => {
    await insertJudgeable(db.url, 'j-empty', { forbidden: ['x'], subGoals: [], requiredInteractions: [] });
    await expect(judge(judgeInput(server, 'm-empty', 'j-empty'))).rejects.toThrow(UngradableRubricError);
    await expect(judge(judgeInput(server, 'm-empty', 'no-such-task'))).rejects.toThrow(UngradableRubricError);
    expect(server.requestCount()).toBe(0);
  });
});
