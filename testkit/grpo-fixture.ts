/**
 * The small GRPO world that the GRPO integration tests and the chaos workload train on: kept tasks
 * of a fictitious synthesis run, the scripted judge / tool simulator / user simulator that play
 * them, and the tiny policy. It lives in one place so that the tests and the chaos benchmark
 * exercise the same tasks, rubric and rewards.
 */
import { query } from './database.js';
import type { Rule, ScriptedRequest } from './model-server.js';

/** The task id of fixture task `idx` of `synthesisRunId`, in the form synthesis gives its tasks. */
export function fixtureTaskId(synthesisRunId: string, idx: number): string {
  return `${synthesisRunId}-task-${String(idx).padStart(5, '0')}`;
}

/** The one tool every fixture task offers. */
const LOOKUP_RECORD_TOOL = {
  type: 'function',
  function: {
    name: 'lookup_record',
    description: 'Look up a record',
    parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  },
};

/**
 * Inserts `count` kept tasks of `synthesisRunId`, as if synthesis had kept them. Task `idx` asks to
 * sort out record `idx`; `instructionSuffix` is appended to every instruction (a longer instruction
 * makes a longer transcript, and a slower trainer step).
 */
export async function insertFixtureTasks(
  url: string,
  tasks: { synthesisRunId: string; count: number; instructionSuffix?: string },
): Promise<void> {
  for (let idx = 0; idx < tasks.count; idx++) {
    await query(
      url,
      `INSERT INTO tasks (task_id, run_id, idx, persona_id, stage, workflow, tools, forbidden, instruction, hidden_context, rubric)
       VALUES ($1, $2, $3, $4, 'kept', $5, $6, $7, $8, $9, $10)`,
      [
        fixtureTaskId(tasks.synthesisRunId, idx),
        tasks.synthesisRunId,
        idx,
        `p${idx}`,
        JSON.stringify(['Find the record', 'Fix it']),
        JSON.stringify([LOOKUP_RECORD_TOOL]),
        JSON.stringify(['Delete records']),
        `Please sort out record ${idx}.${tasks.instructionSuffix ?? ''}`,
        `The record id is R-${idx}.`,
        JSON.stringify({
          forbidden: ['Delete records'],
          subGoals: ['Found', 'Fixed'],
          requiredInteractions: ['Ask the id'],
        }),
      ],
    );
  }
}

/**
 * The judge grades by the transcript: the second sub-goal is achieved when the transcript's length
 * is even, so rewards vary within a group and most groups have a gradient.
 */
function judgeByTranscriptParity(request: ScriptedRequest): string {
  const text = request.body.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('');
  return JSON.stringify({
    forbidden: [{ index: 0, violated: false, evidence: '' }],
    subGoals: [
      { index: 0, achieved: true },
      { index: 1, achieved: text.length % 2 === 0 },
    ],
    requiredInteractions: [{ index: 0, satisfied: false }],
  });
}

/**
 * The judge on its control transcripts (reward/rubric-controls.ts), honest: the empty transcript
 * reaches nothing, the one that says it deletes records violates "Delete records".
 */
export function honestControlJudge(request: ScriptedRequest): string {
  const text = request.body.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('');
  const violated = text.includes('agent: I will do this, although it is forbidden here');
  return JSON.stringify({
    forbidden: [{ index: 0, violated, evidence: violated ? 'Delete records' : '' }],
    subGoals: [
      { index: 0, achieved: false },
      { index: 1, achieved: false },
    ],
    requiredInteractions: [{ index: 0, satisfied: false }],
  });
}

/** The scripted judge (and its controls), tool simulator and user simulator of GRPO runs on the fixture tasks. */
export const grpoFixtureScript: readonly Rule[] = [
  { role: 'judge', reply: judgeByTranscriptParity },
  { role: 'judge-control', reply: honestControlJudge },
  { role: 'tool-simulator', reply: JSON.stringify({ equivalentTo: null, response: '{"id":"R-0"}' }) },
  { role: 'user-simulator', reply: 'The record id is R-0.' },
];

/**
 * The `policy` part of a GRPO spec on the fixture: the tiny base model, served at `endpoint`,
 * sampled at temperature 1 with short answers and the sampling seed `seed`.
 */
export function fixturePolicy<Endpoint>(endpoint: Endpoint, seed = 7) {
  return {
    base: { kind: 'tiny', seed: 0 },
    endpoint,
    sampling: { temperature: 1, maxTokens: 24, seed },
  };
}

/** A kept reasoning problem of a fixture synthesis run, as reasoning synthesis would keep it. */
export interface FixtureProblem {
  readonly kind: 'math' | 'search';
  readonly scenario: string;
  readonly answer: string;
}

/** Inserts kept reasoning problems `<run>/problem-<idx>` of `synthesisRunId`; returns their ids. */
export async function insertFixtureProblems(
  url: string,
  synthesisRunId: string,
  problems: readonly FixtureProblem[],
): Promise<string[]> {
  const ids: string[] = [];
  for (const [idx, problem] of problems.entries()) {
    const id = `${synthesisRunId}/problem-${String(idx).padStart(5, '0')}`;
    await query(
      url,
      `INSERT INTO reasoning_problems (problem_id, run_id, idx, line, kind, source_question, source_answer,
                                       persona_id, scenario, solutions, answer, outcome)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'p0', $6, '[]'::jsonb, $7, 'kept')`,
      [id, synthesisRunId, idx, idx + 1, problem.kind, problem.scenario, problem.answer],
    );
    ids.push(id);
  }
  return ids;
}
