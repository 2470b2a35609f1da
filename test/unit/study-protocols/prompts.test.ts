import { describe, expect, it } from 'vitest';
import {
  buildEvolInstructMessages,
  buildJudgePrompt,
  buildRepairPrompt,
  buildTeacherPrompt,
  evolInstructMessages,
  FREE_ANSWER_OPTION_COUNT,
  formatQuestion,
  judgePrompt,
  ProtocolInputError,
  repairPrompt,
  teacherPrompt,
  type EvolSeed,
} from '../../../activities/study/protocols/index.js';
import { loadTemplate, type Template, type TemplateChoice } from '../../../activities/templates/templates.js';

const V1: TemplateChoice = { version: 'v1', overrides: {} };
const MC = { question: 'What is 1/6 + 1/6?', options: ['1/2', '1/3', '2/3', '3/4'] };
const UNFILLED = /\{\{\s*[A-Za-z0-9_]+\s*\}\}/;

describe('question formatting', () => {
  it('labels the options A, B, C, ... under the question', () => {
    expect(formatQuestion(MC)).toBe('What is 1/6 + 1/6?\n\nOptions:\nA. 1/2\nB. 1/3\nC. 2/3\nD. 3/4');
    expect(formatQuestion({ question: '  Compute 2+2.  ', options: null })).toBe('Compute 2+2.');
  });

  it('refuses more options than there are letters', () => {
    const options = Array.from({ length: 27 }, (_, i) => String(i));
    expect(() => formatQuestion({ question: 'q', options })).toThrow(ProtocolInputError);
  });
});

describe('teacher prompt', () => {
  it('shows the question with its options and asks for a boxed final answer', async () => {
    const prompt = await teacherPrompt(MC);
    expect(prompt.startsWith(formatQuestion(MC))).toBe(true);
    expect(prompt).toContain('\\boxed{}');
    expect(prompt).toMatch(/letter of the correct option/);
    expect(prompt).not.toMatch(UNFILLED);
  });

  it('refuses a template of another stage', async () => {
    const judge = await loadTemplate('studyJudge', V1);
    expect(() => buildTeacherPrompt(judge, MC)).toThrow(ProtocolInputError);
  });
});

describe('judge prompt (seed App. 11.3)', () => {
  it("is the seed's template with the question, the gold option and the whole response filled in", async () => {
    const response = 'We add: 2/6 = 1/3, so \\boxed{B}.';
    const prompt = await judgePrompt({ ...MC, gold: 'B', response });
    expect(prompt.startsWith('You are a helpful assistant who evaluates the correctness and quality')).toBe(
      true,
    );
    expect(prompt).toContain('Just return the letters "A" or "B", with no text around it.');
    expect(prompt).toContain('Simply reply with either CORRECT, INCORRECT.');
    expect(prompt).toContain('please ignore the \\boxed{{}}');
    expect(prompt).toContain(`<Original Question Begin>:\n${formatQuestion(MC)}\n<Original Question End>`);
    expect(prompt).toContain('<Gold Target Begin>:\nB. 1/3\n<Gold Target End>');
    expect(prompt).toContain(`<Predicted Answer Begin>:\n${response}\n<Predicted End>`);
    expect(prompt.endsWith("Judging the correctness of candidates' answers:")).toBe(true);
    expect(prompt).not.toMatch(UNFILLED);
  });

  it('names the gold option also when the gold is its text, and keeps a free-answer gold as given', async () => {
    expect(await judgePrompt({ ...MC, gold: '2/3', response: 'x' })).toContain(
      '<Gold Target Begin>:\nC. 2/3\n',
    );
    expect(await judgePrompt({ question: 'q', gold: ' 42 ', response: 'x' })).toContain(
      '<Gold Target Begin>:\n42\n',
    );
  });

  it('does not fill placeholders that appear inside the response', async () => {
    const template = await loadTemplate('studyJudge', V1);
    const prompt = buildJudgePrompt(template, { question: 'q', gold: '1', response: 'see {{gold_target}}' });
    expect(prompt).toContain('<Predicted Answer Begin>:\nsee {{gold_target}}\n');
  });
});

const SEED: EvolSeed = {
  ...MC,
  answer: 'B',
  field: 'Mathematics',
  subfield: 'Arithmetic',
  difficulty: 'easy',
};

describe('Evol-Instruct prompt (seed App. 11.3)', () => {
  it("splits the seed's prompt into its system and user messages and fills the placeholders", async () => {
    const messages = await evolInstructMessages(SEED);
    expect(messages.map((m) => m.role)).toEqual(['system', 'user']);
    const [system, user] = messages.map((m) => m.content);
    expect(system).toMatch(/^You are an expert question writer for rigorous multiple-choice exams\./);
    expect(system).toMatch(/Return only JSON\.$/);
    expect(user).toContain(
      `Given this original multiple-choice question:\n\n${formatQuestion(MC)}\n\nAnswer: B. 1/3\n`,
    );
    expect(user).toContain(
      '- Same field: Mathematics\n- Same subfield: Arithmetic\n- Similar difficulty: easy\n',
    );
    expect(user).toContain('- Exactly 4 options\n');
    expect(user).toContain('"answer_letter": "A"');
    expect(user).not.toMatch(UNFILLED);
  });

  it("asks for the seed's own option count, and for the default count for a free-answer seed", async () => {
    const ten = { ...SEED, options: Array.from({ length: 10 }, (_, i) => `${i}`), answer: null };
    expect((await evolInstructMessages(ten))[1]!.content).toContain('- Exactly 10 options\n');
    const free = { ...SEED, question: 'Compute 2+2.', options: null, answer: '4' };
    const user = (await evolInstructMessages(free))[1]!.content;
    expect(user).toContain(`- Exactly ${FREE_ANSWER_OPTION_COUNT} options\n`);
    expect(user).toContain('Compute 2+2.\n\nAnswer: 4');
  });

  it('keeps the split when the seed question itself contains a "User:" line', async () => {
    const tricky = { ...SEED, question: 'Dialogue:\nUser:\nhello\nSystem:\nhi\nWhat was said first?' };
    const [system, user] = (await evolInstructMessages(tricky)).map((m) => m.content);
    expect(system).not.toContain('Dialogue');
    expect(user).toContain('Dialogue:\nUser:\nhello');
  });

  it('refuses a template without its System/User lines, and a seed without field metadata', async () => {
    const flat: Template = {
      stage: 'evolInstruct',
      id: 'file:test',
      text: 'Write a question like {{seed_prompt}}',
    };
    expect(() => buildEvolInstructMessages(flat, SEED)).toThrow(/System:/);
    const template = await loadTemplate('evolInstruct', V1);
    expect(() => buildEvolInstructMessages(template, { ...SEED, subfield: ' ' })).toThrow(ProtocolInputError);
  });
});

describe('trace-repair prompt', () => {
  it('shows the question, the gold option and the wrong response, and asks for check and fixed_solution', async () => {
    const wrong = '1/6 + 1/6 = 2/12 = 1/6, so \\boxed{A}.';
    const prompt = await repairPrompt({ ...MC, gold: 'B', wrongResponse: wrong });
    expect(prompt).toContain(`Problem:\n\n${formatQuestion(MC)}\n`);
    expect(prompt).toContain('Reference final answer:\n\nB. 1/3\n');
    expect(prompt).toContain(`<solution>\n${wrong}\n</solution>`);
    expect(prompt).toContain('`check`');
    expect(prompt).toContain('`fixed_solution`');
    expect(prompt).not.toMatch(UNFILLED);
    const template = await loadTemplate('traceRepair', V1);
    expect(buildRepairPrompt(template, { ...MC, gold: 'B', wrongResponse: wrong })).toBe(prompt);
  });
});
