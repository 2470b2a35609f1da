import type { EvaluationResult } from './evaluation-queries.js';
import { html, num, page, section, table, type Fragment } from './html.js';
import { runHeader, usageSection, type TemporalUi } from './runs-page.js';
import type { RoleUsageRow } from './runs-queries.js';

/** An Evaluation run: mean reward per benchmark, task group and policy (checkpoint). */
export function evaluationPage(input: {
  run: Parameters<typeof runHeader>[0];
  ui: TemporalUi;
  results: readonly EvaluationResult[];
  usage: readonly RoleUsageRow[];
}): Fragment {
  const body = html`${runHeader(input.run, input.ui)}
  ${section(
    'Results per benchmark and checkpoint',
    input.results.length
      ? table(
          [
            'benchmark',
            'category / domain',
            'policy',
            'tasks',
            'trials',
            'mean reward',
            'trials ended by a model error',
          ],
          input.results.map((r) => [
            r.benchmark,
            r.taskGroup,
            r.policy,
            r.tasks,
            r.trials,
            num(r.rewardMean),
            r.failures,
          ]),
          'evaluation',
        )
      : html`<p>No trial has finished yet.</p>`,
    'results',
  )}
  ${usageSection(input.usage)}`;
  return page(input.run.runId, [{ label: input.run.runId }], body);
}
