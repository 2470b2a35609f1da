import type pg from 'pg';
import type { ReasoningKind } from '../../schemas/reasoning-correctness.js';
import type { ReasoningSolution } from '../../schemas/reasoning-synthesis.js';
import { TemplatesSchema } from '../../schemas/templates.js';
import { solveMessages } from '../synthesis/reasoning.js';
import { SHIPPED_TEMPLATES, type TemplateChoice } from '../templates/templates.js';
import { reasoningTools } from './reasoning-rollout.js';

/** One kept reasoning problem of a Synthesis run with its SFT records (one per correct solution). */
export interface ReasoningDemonstrations {
  readonly problemId: string;
  readonly records: Array<{ episode_id: string; messages: unknown[]; tools: unknown[] }>;
}

/**
 * The kept reasoning problems of a Synthesis run as SFT data, in synthesis order: each solution
 * that is correct (`keep: correct` marks them; under `agreement` every solution of a kept problem
 * agreed, so all are) becomes the chat the teacher was asked (the run's own solve templates, as a
 * GRPO rollout of the problem opens) followed by the solution, with the tools a rollout offers.
 */
export async function reasoningDemonstrations(
  pool: pg.Pool,
  synthesisRunId: string,
): Promise<ReasoningDemonstrations[]> {
  const templates = await synthesisTemplates(pool, synthesisRunId);
  const { rows } = await pool.query<{
    problem_id: string;
    kind: ReasoningKind;
    scenario: string;
    solutions: ReasoningSolution[];
  }>(
    `SELECT problem_id, kind, scenario, solutions FROM reasoning_problems
      WHERE run_id = $1 AND outcome = 'kept' ORDER BY idx`,
    [synthesisRunId],
  );
  const out: ReasoningDemonstrations[] = [];
  for (const row of rows) {
    const prompt = await solveMessages(row.kind, row.scenario, templates);
    const records = row.solutions
      .filter((s) => s.answer !== null && s.correct !== false)
      .map((s) => ({
        episode_id: `${row.problem_id}/s${s.sampleIndex}`,
        messages: [...prompt, { role: 'assistant', content: s.response }],
        tools: reasoningTools(row.kind),
      }));
    out.push({ problemId: row.problem_id, records });
  }
  return out;
}

/** The solve templates the Synthesis run asked its teacher with (shipped v1 when not recorded). */
async function synthesisTemplates(pool: pg.Pool, runId: string): Promise<TemplateChoice> {
  const { rows } = await pool.query<{ spec: { templates?: unknown } }>(
    'SELECT spec FROM runs WHERE run_id = $1',
    [runId],
  );
  return TemplatesSchema.parse(rows[0]?.spec?.templates ?? SHIPPED_TEMPLATES);
}
