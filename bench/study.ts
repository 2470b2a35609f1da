/**
 * Rejection sampling on the shipped sample pool (examples/study/questions.jsonl, 24 questions in
 * mathematics and physics): teacher calls per accepted response, and judge calls the exact-match
 * fast path saves (responses it decides without the LLM judge), by answer type.
 *
 * The teacher and the judge are the embedded SmolLM2-135M (or MOCKWORLD_MODEL_URL when set: real
 * models give the figures that matter). Uses the default database, so a rerun (or a run after
 * `./bin/mockworld demo examples/study.yaml`, whose sampling settings it shares) is served from
 * the model-call cache; the counts do not depend on that.
 *
 * Run: `npx tsx bench/study.ts`. Prints a Markdown table, writes bench/results/study.json.
 * Knobs: BENCH_ACCEPTED (R, default 2), BENCH_MAX_ATTEMPTS (default 3).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { resolveEndpoint } from '../activities/llm/default-endpoint';
import { createModelClient } from '../activities/llm';
import { closePools, getPool } from '../activities/store/db';
import { migrate } from '../activities/store/migrate';
import { loadQuestions, questionsOf } from '../activities/study/questions';
import { sampleQuestion } from '../activities/study/sampling';
import { stackUp } from '../deploy/stack';
import { REPO_ROOT } from '../deploy/paths';
import { loadEnvironment } from '../schemas/environment';

const ACCEPTED = Number(process.env.BENCH_ACCEPTED ?? 2);
const MAX_ATTEMPTS = Number(process.env.BENCH_MAX_ATTEMPTS ?? 3);
/** Same teacher settings as examples/study.yaml, so the demo's calls are cache hits here. */
const TEACHER = { sampling: { temperature: 1.2, topP: 1, maxTokens: 128, seed: 11 } };
const JUDGE = { sampling: { temperature: 0, topP: 1, maxTokens: 8 } };
const STUDY_ID = `bench-study-r${ACCEPTED}-m${MAX_ATTEMPTS}`;

async function main(): Promise<void> {
  const env = loadEnvironment();
  await stackUp(() => undefined, env); // the embedded model (unless MOCKWORLD_MODEL_URL), migrations
  await migrate(env.DATABASE_URL);
  const pool = getPool(env.DATABASE_URL);
  const models = createModelClient({ databaseUrl: env.DATABASE_URL });
  await pool.query('DELETE FROM study_attempts WHERE study_id = $1', [STUDY_ID]);
  await loadQuestions(pool, {
    studyId: STUDY_ID,
    source: 'seed',
    path: path.join(REPO_ROOT, 'examples', 'study', 'questions.jsonl'),
  });
  const questions = await questionsOf(pool, STUDY_ID, 'seed');
  const stream = {
    name: 'rs',
    temperature: TEACHER.sampling.temperature,
    persona: false,
    questions: 'seed',
  } as const;
  const started = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < questions.length) {
        const question = questions[next++]!;
        await sampleQuestion(models, pool, {
          studyId: STUDY_ID,
          stream,
          questionId: question.questionId,
          teacher: TEACHER,
          judge: JUDGE,
          accepted: ACCEPTED,
          maxAttempts: MAX_ATTEMPTS,
          attemptsPerWave: MAX_ATTEMPTS,
          seed: 0,
        });
      }
    }),
  );
  const seconds = (Date.now() - started) / 1000;

  const { rows } = await pool.query<{
    kind: string;
    attempts: number;
    accepted: number;
    exact: number;
    llm: number;
    failed: number;
    exhausted: number;
  }>(
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
    [STUDY_ID, ACCEPTED],
  );
  const total = rows.reduce(
    (t, r) => ({
      kind: 'all',
      attempts: t.attempts + r.attempts,
      accepted: t.accepted + r.accepted,
      exact: t.exact + r.exact,
      llm: t.llm + r.llm,
      failed: t.failed + r.failed,
      exhausted: t.exhausted + r.exhausted,
    }),
    { kind: 'all', attempts: 0, accepted: 0, exact: 0, llm: 0, failed: 0, exhausted: 0 },
  );
  const endpoint = resolveEndpoint(undefined);
  const lines = [
    `| answers (${questions.length} questions, ${endpoint.model}) | teacher calls | accepted | teacher calls per accepted | decided by the fast path (judge calls saved) | LLM judge calls | judge failures | questions short of R = ${ACCEPTED} |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...[...rows, total].map(
      (r) =>
        `| ${r.kind} | ${r.attempts} | ${r.accepted} | ${r.accepted ? (r.attempts / r.accepted).toFixed(2) : '∞'} | ${r.exact} (${((100 * r.exact) / r.attempts).toFixed(0)}%) | ${r.llm} | ${r.failed} | ${r.exhausted} |`,
    ),
  ];
  console.log(lines.join('\n'));
  console.log(`\n(${seconds.toFixed(0)} s; R = ${ACCEPTED}, at most ${MAX_ATTEMPTS} attempts per question)`);
  await mkdir(path.join(REPO_ROOT, 'bench', 'results'), { recursive: true });
  await writeFile(
    path.join(REPO_ROOT, 'bench', 'results', 'study.json'),
    JSON.stringify(
      { model: endpoint.model, accepted: ACCEPTED, maxAttempts: MAX_ATTEMPTS, seconds, rows, total },
      null,
      2,
    ),
  );
  await closePools();
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
