import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { z } from 'zod';
import { checkStructured, jsonSchemaResponseFormat } from '../../activities/llm/structured-output.js';
import { evolInstructMessages } from '../../activities/study/protocols/evol-prompt.js';
import { judgePrompt } from '../../activities/study/protocols/judge-prompt.js';
import { repairPrompt } from '../../activities/study/protocols/repair.js';
import { loadTemplate, renderTemplate, type TemplateStage } from '../../activities/templates/templates.js';
import { turnOffer } from '../../activities/world/turn-tool-choice.js';
import { ASK_USER_TOOL } from '../../activities/world/ask-user.js';
import { COVERAGE_SCHEMA_NAME, coverageSchema } from '../../schemas/coverage-judge.js';
import { ANSWER_MATCH_SCHEMA_NAME, AnswerMatchSchema } from '../../schemas/reasoning-correctness.js';
import { EVOLVED_QUESTION_SCHEMA_NAME, EvolvedQuestionSchema } from '../../schemas/evolved-question.js';
import { JUDGEMENT_SCHEMA_NAME, judgementSchema } from '../../schemas/rubric-judge.js';
import { STUDY_JUDGE_VERDICT_SCHEMA_NAME, StudyJudgeVerdictSchema } from '../../schemas/study-verdict.js';
import {
  FuzzyTaskSchema,
  refinedToolsetSchema,
  rubricDraftSchema,
  toolsetDraftSchema,
} from '../../schemas/synthesis-records.js';
import { SynthesisSpecSchema } from '../../schemas/synthesis-spec.js';
import { TOOL_SIMULATION_SCHEMA_NAME, toolSimulationSchema } from '../../schemas/tool-simulation.js';
import { REPAIR_SCHEMA_NAME, RepairOutputSchema } from '../../schemas/trace-repair.js';
import { startEmbeddedModelServer, type EmbeddedModelServer } from '../../services/embedded-model/index.js';

/**
 * Every structured output mockworld asks a model for, sent to the real embedded server with the
 * real SmolLM2 model, each schema built as the stage builds it for a realistic task and with the
 * stage's own prompt template: the server builds a grammar for each (no 400 "Cannot build a
 * grammar") and the answer passes the stage's own validation. The token limits are as small as
 * lets these answers close (greedy decoding with a repeat penalty, so each run is the same).
 */

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// The schemas as the default demo (examples/synthesis-demo.yaml) builds them for the embedded model.
const demo = SynthesisSpecSchema.parse(
  parse(readFileSync(path.join(REPO, 'examples/synthesis-demo.yaml'), 'utf8')),
);
const size = demo.taskSize;
/** A count range as the stage prompts write it (activities/synthesis/stages.ts). */
const range = (from: number, max: number) => (Math.min(from, max) === max ? `${max}` : `${from} to ${max}`);
const template = async (stage: TemplateStage, values: Record<string, unknown>) =>
  renderTemplate(await loadTemplate(stage, { version: 'v1', overrides: {} }), values);

// One realistic task, as the stages see it.
const persona =
  'A community pharmacist in a small town who manages prescription refills, insurance claims and stock of controlled medicines.';
const scenario = 'A patient asks for a refill of a prescription, and the insurance claim must be filed.';
const workflow = ['Look up the prescription of the patient', 'Submit the insurance claim for it'];
const tools = [
  {
    type: 'function',
    function: {
      name: 'lookup_prescription',
      description: 'Find a prescription by patient name; returns its id, drug and refills left.',
      parameters: { type: 'object', properties: { patient: { type: 'string' } }, required: ['patient'] },
    },
  },
  {
    type: 'function',
    function: {
      name: 'submit_claim',
      description: 'Submit an insurance claim for a prescription id; returns the claim id and status.',
      parameters: {
        type: 'object',
        properties: { prescription_id: { type: 'string' }, insurer: { type: 'string' } },
        required: ['prescription_id', 'insurer'],
      },
    },
  },
];
const instruction = 'Can you refill my prescription and sort out the insurance?';
const hiddenContext = 'I am Ann Lee. My insurer is BlueCross.';
const rubric = {
  forbidden: ['Submit a claim to an insurer the user did not name'],
  subGoals: ['The prescription of Ann Lee is found', 'A claim is submitted to BlueCross'],
  requiredInteractions: ['The assistant asks for the patient name'],
};
const transcript = [
  `user: ${instruction}`,
  'assistant calls ask_user({"question":"What is your name?"})',
  'tool ask_user: Ann Lee',
  'assistant calls lookup_prescription({"patient":"Ann Lee"})',
  'tool lookup_prescription: {"id":"RX-1","drug":"amoxicillin","refills":2}',
  'assistant: Your prescription RX-1 is found.',
].join('\n');
const studyQuestion = {
  questionId: 'q1',
  domain: 'chemistry',
  question: 'Which gas do plants take in for photosynthesis?',
  options: ['Oxygen', 'Carbon dioxide', 'Nitrogen', 'Helium'],
  answer: 'B',
};

const TEACHER_SYSTEM =
  'You are an expert designer of realistic, verifiable tool-use tasks for training AI agents. Answer with JSON only.';

interface Case {
  readonly name: string;
  readonly schema: z.ZodType;
  readonly messages: () => Promise<OpenAI.Chat.ChatCompletionMessageParam[]>;
  readonly maxTokens: number;
}

const user = (content: string): OpenAI.Chat.ChatCompletionMessageParam => ({ role: 'user', content });

const CASES: Case[] = [
  {
    name: 'toolset',
    schema: toolsetDraftSchema(size),
    maxTokens: 700,
    messages: async () => [
      { role: 'system', content: TEACHER_SYSTEM },
      user(
        await template('toolset', {
          persona,
          workflowSteps: range(2, size.workflowSteps),
          toolCount: range(3, size.tools),
        }),
      ),
    ],
  },
  {
    name: 'refine',
    schema: refinedToolsetSchema(size, tools.length, demo.refine.distractors),
    maxTokens: 500,
    messages: async () => [
      { role: 'system', content: TEACHER_SYSTEM },
      user(
        await template('refine', {
          scenario,
          workflow: JSON.stringify(workflow),
          tools: JSON.stringify(tools),
          refinements:
            '- Add exactly 1 distractor tool(s): plausible in this setting but not needed by the workflow.',
        }),
      ),
    ],
  },
  {
    name: 'instruction',
    schema: FuzzyTaskSchema,
    maxTokens: 300,
    messages: async () => [
      { role: 'system', content: TEACHER_SYSTEM },
      user(
        await template('instruction', {
          scenario,
          request: 'Refill the prescription of Ann Lee and file the claim with BlueCross.',
          workflow: JSON.stringify(workflow),
        }),
      ),
    ],
  },
  {
    name: 'rubric',
    schema: rubricDraftSchema(size),
    maxTokens: 400,
    messages: async () => [
      {
        role: 'system',
        content: 'You are a careful grader who writes objective rubrics. Answer with JSON only.',
      },
      user(
        await template('rubric', {
          workflow: workflow.map((step, i) => `${i}. ${step}`).join('\n'),
          instruction,
          hiddenContext,
          demonstrations: `### Execution 0\n${transcript}`,
          subGoalCount: range(1, size.subGoals),
          interactionCount: range(0, size.requiredInteractions),
        }),
      ),
    ],
  },
  {
    name: COVERAGE_SCHEMA_NAME,
    schema: coverageSchema(workflow.length),
    maxTokens: 200,
    messages: async () => [
      {
        role: 'system',
        content: 'You are a strict, impartial grader of AI assistant transcripts. Answer with JSON only.',
      },
      user(
        await template('coverage', {
          instruction,
          workflow: workflow.map((step, i) => `${i}. ${step}`).join('\n'),
          transcript,
          stepCount: String(workflow.length),
        }),
      ),
    ],
  },
  ...[0, 2].map((shown): Case => ({
    name: `${TOOL_SIMULATION_SCHEMA_NAME} (${shown} entries shown)`,
    schema: toolSimulationSchema(shown),
    maxTokens: 200,
    messages: async () => [
      user(
        await template('toolSimulator', {
          instruction,
          toolName: 'lookup_prescription',
          toolSpec: JSON.stringify(tools[0]!.function, null, 2),
          entries:
            shown === 0
              ? '(no earlier calls of this tool)'
              : '0. arguments {"patient":"Bob Ray"} returned {"id":"RX-7","refills":0}\n1. arguments {"patient":"Ann Lee"} returned {"id":"RX-1","refills":2}',
          arguments: '{"patient":"Ann Lee"}',
        }),
      ),
    ],
  })),
  {
    name: JUDGEMENT_SCHEMA_NAME,
    schema: judgementSchema(rubric),
    maxTokens: 200,
    messages: async () => {
      const numbered = (items: string[]) => items.map((item, i) => `${i}. ${item}`).join('\n');
      return [
        {
          role: 'system',
          content: 'You are a strict, fair grader of assistant transcripts. Answer with JSON only.',
        },
        user(
          await template('judge', {
            instruction,
            hiddenContext,
            transcript,
            forbidden: numbered(rubric.forbidden),
            forbiddenCount: String(rubric.forbidden.length),
            subGoals: numbered(rubric.subGoals),
            subGoalCount: String(rubric.subGoals.length),
            requiredInteractions: numbered(rubric.requiredInteractions),
            interactionCount: String(rubric.requiredInteractions.length),
          }),
        ),
      ];
    },
  },
  {
    name: STUDY_JUDGE_VERDICT_SCHEMA_NAME,
    schema: StudyJudgeVerdictSchema,
    maxTokens: 32,
    messages: async () => [
      user(await judgePrompt({ ...studyQuestion, gold: 'B', response: 'The answer is \\boxed{B}.' })),
      { role: 'assistant', content: 'It is right.' },
      user('Give your verdict as JSON: {"verdict": "CORRECT"} or {"verdict": "INCORRECT"}.'),
    ],
  },
  {
    name: ANSWER_MATCH_SCHEMA_NAME,
    schema: AnswerMatchSchema,
    maxTokens: 120,
    messages: async () => [
      {
        role: 'system',
        content: 'You grade short answers against a reference answer. Answer with JSON only.',
      },
      user(
        [
          `Question: ${studyQuestion.question}`,
          'Reference answer: carbon dioxide',
          'Answer to grade: CO2',
          '',
          'Is the answer to grade equivalent to the reference answer? Reply with {"equivalent": true or false, "reason": "<one sentence>"}.',
        ].join('\n'),
      ),
    ],
  },
  {
    name: REPAIR_SCHEMA_NAME,
    schema: RepairOutputSchema,
    maxTokens: 300,
    messages: async () => [
      user(
        await repairPrompt({
          ...studyQuestion,
          gold: 'B',
          wrongResponse: 'Plants breathe oxygen, so the answer is \\boxed{A}.',
        }),
      ),
    ],
  },
  {
    name: EVOLVED_QUESTION_SCHEMA_NAME,
    schema: EvolvedQuestionSchema,
    maxTokens: 400,
    messages: async () =>
      [
        ...(await evolInstructMessages({
          ...studyQuestion,
          field: 'chemistry',
          subfield: 'chemistry',
          difficulty: 'similar to the original',
        })),
      ] as OpenAI.Chat.ChatCompletionMessageParam[],
  },
];

describe('every structured output on the embedded model', () => {
  let server: EmbeddedModelServer;
  let client: OpenAI;

  beforeAll(async () => {
    server = await startEmbeddedModelServer({ port: 0 });
    client = new OpenAI({ baseURL: server.url, apiKey: 'unused', maxRetries: 0, timeout: 600_000 });
  }, 600_000);

  afterAll(async () => server?.close());

  it('covers every structured() call of the product (a new one must be added here)', async () => {
    const callers: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      for (const entry of await readdir(path.join(REPO, dir), { withFileTypes: true })) {
        const relative = path.join(dir, entry.name);
        if (entry.isDirectory()) await walk(relative);
        else if (
          entry.name.endsWith('.ts') &&
          /\.structured\(/.test(await readFile(path.join(REPO, relative), 'utf8'))
        )
          callers.push(relative);
      }
    };
    await walk('activities');
    expect(callers.sort()).toEqual([
      'activities/correctness/search-match.ts', // AnswerMatch
      'activities/reward/judge.ts', // judgement
      'activities/study/evolve.ts', // evolved_question
      'activities/study/judge.ts', // study-judge-verdict
      'activities/study/repair.ts', // trace_repair
      'activities/synthesis/teacher-call.ts', // the four stage schemas below
      'activities/world/tool-simulator.ts', // ToolSimulation
    ]);
    // The synthesis stages ask through callStage (teacher-call.ts): every schema they pass.
    const stageSchemas: string[] = [];
    for (const file of await readdir(path.join(REPO, 'activities/synthesis'))) {
      const text = await readFile(path.join(REPO, 'activities/synthesis', file), 'utf8');
      if (file === 'teacher-call.ts' || !text.includes('callStage(')) continue;
      stageSchemas.push(...[...text.matchAll(/\bschema: (\w+)/g)].map((m) => m[1]!));
    }
    expect(stageSchemas.sort()).toEqual([
      'FuzzyTaskSchema',
      'coverageSchema',
      'refinedToolsetSchema',
      'rubricDraftSchema',
      'toolsetDraftSchema',
    ]);
  });

  for (const c of CASES) {
    it(`${c.name}: a grammar and a valid answer`, async () => {
      const completion = await client.chat.completions.create({
        model: server.model,
        messages: await c.messages(),
        response_format: jsonSchemaResponseFormat(c.schema, c.name.split(' ')[0]!) as never,
        max_tokens: c.maxTokens,
        temperature: 0,
        frequency_penalty: 0.5,
        seed: 1,
      });
      const choice = completion.choices[0]!;
      const checked = checkStructured(choice.message as never, choice.finish_reason, c.schema, 256 * 1024);
      expect(checked, choice.message.content ?? '').toMatchObject({ ok: true });
    }, 600_000);
  }

  it('answers the agent turn with a call of a task tool or ask_user, under the tools grammar', async () => {
    const completion = await client.chat.completions.create({
      model: server.model,
      messages: [
        { role: 'system', content: 'You carry out tasks for a user by calling tools.' },
        user(instruction),
      ],
      tools: [...tools, ASK_USER_TOOL] as OpenAI.Chat.ChatCompletionTool[],
      max_tokens: 120,
      temperature: 0,
      seed: 1,
    });
    const message = completion.choices[0]!.message;
    const names = [...tools, ASK_USER_TOOL].map((t) => t.function.name);
    if (message.tool_calls?.length) {
      const call = message.tool_calls[0] as { function: { name: string; arguments: string } };
      expect(names).toContain(call.function.name);
      expect(() => JSON.parse(call.function.arguments)).not.toThrow();
    } else expect(message.content?.trim().length).toBeGreaterThan(0);
  }, 600_000);
  it("honours each turn's tool choice of the demo: ask_user, then a task tool, then an answer", async () => {
    const names = tools.map((t) => t.function.name);
    const seen: string[] = [];
    for (const choice of demo.demonstrationToolChoice) {
      const offer = turnOffer(choice, tools as never);
      const completion = await client.chat.completions.create({
        model: server.model,
        messages: [
          { role: 'system', content: 'You carry out tasks for a user by calling tools.' },
          user(instruction),
        ],
        tools: [...offer.tools] as OpenAI.Chat.ChatCompletionTool[],
        ...(offer.toolChoice ? { tool_choice: offer.toolChoice } : {}),
        max_tokens: 120,
        temperature: 0,
        seed: 1,
      });
      const message = completion.choices[0]!.message;
      const call = message.tool_calls?.[0] as { function: { name: string; arguments: string } } | undefined;
      if (call) expect(() => JSON.parse(call.function.arguments)).not.toThrow();
      seen.push(call ? (names.includes(call.function.name) ? 'task_tool' : call.function.name) : 'answer');
    }
    expect(seen).toEqual(['ask_user', 'task_tool', 'answer']);
  }, 600_000);
});
