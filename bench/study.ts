/**
 * Rejection sampling on the shipped sample pool (examples/study/questions.jsonl, 24 questions in
 * mathematics and physics): teacher calls per accepted response, and judge calls the exact-match
 * fast path saves (responses it decides without the LLM judge), by answer type.
 *
 * Two teachers on the same pool and code path: (1) the embedded SmolLM2-135M as teacher and judge
 * (or MOCKWORLD_MODEL_URL when set), which rarely writes a final answer the fast path can read;
 * (2) a scripted teacher on the test model server that answers like a competent model in the
 * seed's formats (\boxed{}, "The final answer is", option letters or texts, equivalent numerals
 * such as 0.75 for 3/4, some answers only in prose), right 60% of the time, with a scripted judge
 * for what the fast path leaves undecided. Uses the default database, so a rerun (or a run after
 * `./bin/mockworld demo examples/study.yaml`, whose sampling settings it shares) is served from
 * the model-call cache; the counts do not depend on that.
 *
 * Run: `npx tsx bench/study.ts`. Prints a Markdown table, writes bench/results/study.json.
 * Knobs (embedded teacher): BENCH_ACCEPTED (R, default 2), BENCH_MAX_ATTEMPTS (default 3).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import type pg from 'pg';
import path from 'node:path';
import { resolveEndpoint } from '../activities/llm/default-endpoint.js';
import { createModelClient } from '../activities/llm/index.js';
import { closePools, getPool } from '../activities/store/db.js';
import { migrate } from '../activities/store/migrate.js';
import { STUDY_JUDGE_ROLE } from '../activities/study/judge.js';
import { loadQuestions, questionsOf } from '../activities/study/questions.js';
import { sampleQuestion } from '../activities/study/sampling.js';
import { stackUp } from '../deploy/stack.js';
import { REPO_ROOT } from '../deploy/paths.js';
import { loadEnvironment } from '../schemas/environment.js';
import { ModelEndpointSchema, type ModelRole } from '../schemas/model-endpoint.js';
import { QuestionLineSchema, type QuestionLine } from '../schemas/study-question.js';
import { startModelServer, type ScriptedRequest } from '../testkit/model-server.js';

const ACCEPTED = Number(process.env.BENCH_ACCEPTED ?? 2);
const MAX_ATTEMPTS = Number(process.env.BENCH_MAX_ATTEMPTS ?? 3);
/** Same teacher settings as examples/study.yaml, so the demo's calls are cache hits here. */
const TEACHER = { sampling: { temperature: 1.2, topP: 1, maxTokens: 128, seed: 11 } };
const JUDGE = { sampling: { temperature: 0, topP: 1, maxTokens: 8 } };
const POOL_FILE = path.join(REPO_ROOT, 'examples', 'study', 'questions.jsonl');

interface Row {
  teacher: string;
  kind: string;
  attempts: number;
  accepted: number;
  exact: number;
  llm: number;
  failed: number;
  exhausted: number;
}

/** Rejection sampling of the whole pool with one teacher; returns the figures per answer type. */
async function samplePool(
  pool: pg.Pool,
  label: string,
  studyId: string,
  roles: { teacher: ModelRole; judge: ModelRole },
  accepted: number,
  maxAttempts: number,
): Promise<Row[]> {
  const models = createModelClient({ databaseUrl: loadEnvironment().DATABASE_URL });
  await pool.query('DELETE FROM study_attempts WHERE study_id = $1', [studyId]);
  await loadQuestions(pool, { studyId, source: 'seed', path: POOL_FILE });
  const questions = await questionsOf(pool, studyId, 'seed');
  const stream = {
    name: 'rs',
    temperature: roles.teacher.sampling.temperature,
    persona: false,
    questions: 'seed',
  } as const;
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < questions.length) {
        const question = questions[next++]!;
        await sampleQuestion(models, pool, {
          studyId,
          stream,
          questionId: question.questionId,
          teacher: roles.teacher,
          judge: roles.judge,
          accepted,
          maxAttempts,
          attemptsPerWave: Math.min(maxAttempts, 4),
          seed: 0,
        });
      }
    }),
  );
  const { rows } = await pool.query<Omit<Row, 'teacher'>>(
    `WITH per_question AS (
       SELECT CASE WHEN q.options IS NULL THEN 'free answer' ELSE 'multiple choice' END AS kind,
              count(*) AS attempts,
              count(*) FILTER (WHERE a.correct) AS accepted,
              count(*) FILTER (WHERE a.judged_by = 'exact') AS exact,
              count(*) FILTER (WHERE a.judged_by = 'llm') AS llm,
              count(*) FILTER (WHERE a.judged_by = 'judge-failed') AS failed
         FROM study_attempts a JOIN study_questions q USING (study_id, question_id)
        WHERE a.study_id = $1 GROUP BY a.question_id, q.options)
     SELECT kind, sum(attempts)::int AS attempts, sum(accepted)::int AS accepted, sum(exact)::int AS exact,
            sum(llm)::int AS llm, sum(failed)::int AS failed, count(*) FILTER (WHERE accepted < $2)::int AS exhausted
       FROM per_question GROUP BY kind ORDER BY kind`,
    [studyId, accepted],
  );
  const all = rows.reduce(
    (t, r) => ({
      ...t,
      attempts: t.attempts + r.attempts,
      accepted: t.accepted + r.accepted,
      exact: t.exact + r.exact,
      llm: t.llm + r.llm,
      failed: t.failed + r.failed,
      exhausted: t.exhausted + r.exhausted,
    }),
    { kind: 'all', attempts: 0, accepted: 0, exact: 0, llm: 0, failed: 0, exhausted: 0 },
  );
  return [...rows, all].map((r) => ({ teacher: label, ...r }));
}

/** A deterministic draw in [0, 1) from a request's sampling seed and a salt. */
function draw(seed: number, salt: number): number {
  const x = Math.sin(seed * 12.9898 + salt * 78.233) * 43758.5453;
  return x - Math.floor(x);
}

/**
 * A competent teacher's answers to the pool, in the formats real models use: right 60% of the
 * time; the final answer boxed, stated on an answer line, given as an option letter or text, as an
 * equivalent numeral (0.75 for 3/4, 43.0 for 43), or only in prose (left to the judge).
 */
function competentTeacher(pool: QuestionLine[]) {
  return (request: ScriptedRequest): string => {
    const prompt = request.body.messages
      .map((m) => (typeof m.content === 'string' ? m.content : ''))
      .join('\n');
    const question = pool.find((q) => prompt.includes(q.question));
    if (request.role === STUDY_JUDGE_ROLE) {
      const gold = /<Gold Target Begin>:\s*([\s\S]*?)\s*<Gold Target End>/.exec(prompt)?.[1] ?? '';
      const predicted = /<Predicted Answer Begin>:\s*([\s\S]*?)\s*<Predicted End>/.exec(prompt)?.[1] ?? '';
      return predicted.includes(`is ${gold.replace(/^[A-Z]\. /, '')}`) ? 'CORRECT' : 'INCORRECT';
    }
    if (!question) throw new Error(`not a pool question: ${prompt.slice(0, 120)}`);
    const seed = request.body.seed ?? 0;
    const right = draw(seed, 1) < 0.6;
    const options = question.options ?? [];
    const goldIndex = options.length ? question.answer.charCodeAt(0) - 65 : -1;
    const wrongNumber = String(Number(question.answer.split('/')[0]) + 1 + Math.floor(draw(seed, 2) * 5));
    const answer = options.length
      ? right
        ? question.answer
        : String.fromCharCode(65 + ((goldIndex + 1) % options.length))
      : right
        ? question.answer
        : wrongNumber;
    const style = Math.floor(draw(seed, 3) * 5);
    const reasoning = 'Let me work through this carefully, one step at a time.';
    if (options.length) {
      const text = options[answer.charCodeAt(0) - 65]!;
      return [
        `${reasoning}\n\\boxed{${answer}}`,
        `${reasoning}\nThe final answer is ${answer}.`,
        `${reasoning}\nAnswer: ${text}`,
        `${reasoning}\n\\boxed{${answer}}`,
        `${reasoning} The correct choice is ${text}, which is ${answer}.`,
      ][style]!;
    }
    const numeral = answer.includes('/')
      ? String(Number(answer.split('/')[0]) / Number(answer.split('/')[1]))
      : `${answer}.0`;
    return [
      `${reasoning}\n\\boxed{${answer}}`,
      `${reasoning}\nThe final answer is ${answer}.`,
      `${reasoning}\n\\boxed{${numeral}}`,
      `${reasoning}\nAnswer: ${answer}`,
      `${reasoning} So the result is ${answer} in the end.`,
    ][style]!;
  };
}

async function main(): Promise<void> {
  const env = loadEnvironment();
  await stackUp(() => undefined, env); // the embedded model (unless MOCKWORLD_MODEL_URL), migrations
  await migrate(env.DATABASE_URL);
  const pool = getPool(env.DATABASE_URL);
  const started = Date.now();
  const rows = await samplePool(
    pool,
    resolveEndpoint(undefined).model,
    `bench-study-r${ACCEPTED}-m${MAX_ATTEMPTS}`,
    { teacher: TEACHER, judge: JUDGE },
    ACCEPTED,
    MAX_ATTEMPTS,
  );
  const embeddedSeconds = (Date.now() - started) / 1000;

  const lines = (await readFile(POOL_FILE, 'utf8')).split('\n').filter((l) => l.trim());
  const server = await startModelServer({
    script: competentTeacher(lines.map((l) => QuestionLineSchema.parse(JSON.parse(l)))),
    log: false,
  });
  try {
    const endpoint = ModelEndpointSchema.parse({ baseUrl: server.url, model: 'competent-teacher' });
    rows.push(
      ...(await samplePool(
        pool,
        'scripted competent teacher',
        'bench-study-scripted',
        {
          teacher: { endpoint, sampling: { temperature: 1.2, topP: 1, maxTokens: 512, seed: 1 } },
          judge: { endpoint, sampling: JUDGE.sampling },
        },
        32,
        128,
      )),
    );
  } finally {
    await server.close();
  }

  const table = [
    '| teacher | answers | teacher calls | accepted | teacher calls per accepted | decided by the fast path (judge calls saved) | graded by the LLM judge | judge failures | questions short of R |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.teacher} | ${r.kind} | ${r.attempts} | ${r.accepted} | ${r.accepted ? (r.attempts / r.accepted).toFixed(2) : '∞'} | ${r.exact} (${((100 * r.exact) / r.attempts).toFixed(0)}%) | ${r.llm} | ${r.failed} | ${r.exhausted} |`,
    ),
  ];
  console.log(table.join('\n'));
  console.log(
    `\n(24 questions; embedded: R = ${ACCEPTED}, at most ${MAX_ATTEMPTS} attempts, ${embeddedSeconds.toFixed(0)} s; ` +
      'scripted: R = 32, at most 128 attempts. A failed judgement costs two judge calls and is never a verdict.)',
  );
  await mkdir(path.join(REPO_ROOT, 'bench', 'results'), { recursive: true });
  await writeFile(
    path.join(REPO_ROOT, 'bench', 'results', 'study.json'),
    JSON.stringify({ accepted: ACCEPTED, maxAttempts: MAX_ATTEMPTS, embeddedSeconds, rows }, null, 2),
  );
  await closePools();
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
