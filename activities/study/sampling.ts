import type pg from 'pg';
import type { ModelRole } from '../../schemas/model-endpoint.js';
import { resolveEndpoint } from '../llm/default-endpoint.js';
import type { ChatCompletionMessageParam, ModelClient } from '../llm/index.js';
import type { Stream } from './grid.js';
import { StudyInputError } from './errors.js';
import { gradeAnswer } from './judge.js';
import { controlTheJudge } from './judge-controls.js';
import { choosePersona, personaSystemMessage } from './protocols/persona.js';
import { teacherPrompt } from './protocols/teacher-prompt.js';
import { questionById } from './questions.js';
import { storableText } from '../store/storable.js';

/** Ledger role of teacher calls. */
export const TEACHER_ROLE = 'teacher';

export interface SampleQuestionInput {
  readonly studyId: string;
  readonly stream: Stream;
  readonly questionId: string;
  readonly teacher: ModelRole;
  readonly judge: ModelRole;
  /** R: stop once this many responses are correct. */
  readonly accepted: number;
  /** Attempts at most; null: until R are accepted, as the seed samples ("until 32 correct ones are collected"). */
  readonly maxAttempts: number | null;
  readonly attemptsPerWave: number;
  readonly seed: number;
  /** The exact-match shortcut of the judge (ScalingStudy `exactMatch`); absent: on. */
  readonly exactMatch?: boolean;
}

export interface SampleQuestionResult {
  readonly attempts: number;
  readonly accepted: number;
  /** True when maxAttempts ran out before R responses were accepted. */
  readonly exhausted: boolean;
}

/**
 * Plain rejection sampling of one question on one stream (seed 002 Sec. 4): teacher samples in
 * waves until R are judged correct or the attempt cap is reached. Attempt n is sample index n of
 * a cached call and is stored insert-if-absent, so a resumed activity fills only what is missing,
 * pays for nothing twice and finds the same responses in the same order.
 */
export async function sampleQuestion(
  models: ModelClient,
  pool: pg.Pool,
  input: SampleQuestionInput,
  onProgress: (done: { attempts: number; accepted: number }) => void = () => undefined,
): Promise<SampleQuestionResult> {
  const question = await questionById(pool, input.studyId, input.questionId);
  const prompt = await teacherPrompt(question);
  const personas = input.stream.persona ? await loadPersonaIds(pool, input.studyId) : [];
  const { rows } = await pool.query<{ attempt: number; correct: boolean | null }>(
    `SELECT attempt, correct FROM study_attempts WHERE study_id = $1 AND stream = $2 AND question_id = $3`,
    [input.studyId, input.stream.name, input.questionId],
  );
  const done = new Map(rows.map((r) => [r.attempt, r.correct]));
  const accepted = () => [...done.values()].filter((c) => c === true).length;

  const endpoint = resolveEndpoint(input.teacher.endpoint);
  const sampling = { ...input.teacher.sampling, temperature: input.stream.temperature };

  const attempt = async (n: number) => {
    const messages: ChatCompletionMessageParam[] = [];
    let personaId: string | null = null;
    if (input.stream.persona) {
      const chosen = choosePersona(personas, input.questionId, n, input.seed);
      personaId = chosen.id;
      messages.push({ role: 'system', content: personaSystemMessage(chosen.persona) });
    }
    messages.push({ role: 'user', content: prompt });
    const answer = await models.chat({
      endpoint,
      messages,
      sampling,
      sampleIndex: n,
      runId: input.studyId,
      role: TEACHER_ROLE,
    });
    const { response, verdict } = await gradeAnswer(
      models,
      { studyId: input.studyId, judge: input.judge, question, exactMatch: input.exactMatch },
      answer.message.content,
    );
    await pool.query(
      `INSERT INTO study_attempts (study_id, stream, question_id, attempt, response, final_answer, correct,
                                   judged_by, persona_id, teacher_key, judge_key)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING`,
      [
        input.studyId,
        input.stream.name,
        input.questionId,
        n,
        storableText(response),
        verdict.finalAnswer === null ? null : storableText(verdict.finalAnswer),
        verdict.correct,
        verdict.judgedBy,
        personaId,
        answer.cacheKey,
        verdict.judgeKey,
      ],
    );
    done.set(n, verdict.correct);
  };

  // Waves start at multiples of the wave size, and whether a wave is drawn depends only on the
  // attempts before it (all filled by then), so the set of attempts made never depends on where a
  // previous try was interrupted: a wave cut short is completed even when the attempts it kept
  // already reach R.
  const acceptedBefore = (start: number) =>
    [...done.entries()].filter(([n, correct]) => n < start && correct === true).length;
  const cap = input.maxAttempts ?? Number.POSITIVE_INFINITY;
  for (let start = 0; acceptedBefore(start) < input.accepted && start < cap; start += input.attemptsPerWave) {
    const end = Math.min(start + input.attemptsPerWave, cap);
    const missing: number[] = [];
    for (let n = start; n < end; n++) if (!done.has(n)) missing.push(n);
    await Promise.all(missing.map(attempt));
    onProgress({ attempts: done.size, accepted: accepted() });
  }
  await controlTheJudge(models, pool, input, { stream: input.stream.name, questionId: input.questionId });
  return { attempts: done.size, accepted: accepted(), exhausted: accepted() < input.accepted };
}

async function loadPersonaIds(pool: pg.Pool, studyId: string): Promise<{ id: string; persona: string }[]> {
  const { rows } = await pool.query<{ persona_id: string; persona: string }>(
    'SELECT persona_id, persona FROM synthesis_personas WHERE run_id = $1 ORDER BY idx',
    [studyId],
  );
  if (rows.length === 0)
    throw new StudyInputError(studyId, 'it has no personas loaded: the persona protocol needs some');
  return rows.map((r) => ({ id: r.persona_id, persona: r.persona }));
}
