import { groupAdvantages } from '../../activities/reward/advantages.js';
import { metricChartSpec, metricSeries, rewardChartSpec } from '../../activities/charts/training-charts.js';
import type { IterationMetrics } from '../../activities/training/metrics.js';
import type { EpisodeRow } from './episode-queries.js';
import { chart, html, href, num, page, section, seg, table, type Fragment } from './html.js';
import { runHeader, usageSection, type TemporalUi } from './runs-page.js';
import type { RoleUsageRow } from './runs-queries.js';

const slug = (name: string) => name.replace(/[^a-zA-Z0-9]+/g, '-');

/** A GRPO run: reward and every per-iteration metric as interactive curves, iterations, usage. */
export function trainingRunPage(input: {
  run: Parameters<typeof runHeader>[0];
  ui: TemporalUi;
  iterations: readonly IterationMetrics[];
  usage: readonly RoleUsageRow[];
}): Fragment {
  const { run, iterations } = input;
  const series = metricSeries(iterations);
  const iterationRows = iterations.map((it) => {
    const m = it.metrics as Record<string, any>;
    return [
      html`<a href="${href(`/runs/${seg(run.runId)}/iterations/${it.iteration}`)}">${it.iteration}</a>`,
      it.policyVersion,
      num(m.rewardMean),
      num(m.rewardStd),
      num(m.evaluation?.rewardMean),
      m.judged ?? '—',
      num(m.trainer?.loss, 4),
    ];
  });
  const body = html`${runHeader(run, input.ui)}
  ${section('Reward', iterations.length ? chart('chart-reward', rewardChartSpec(run.runId, iterations)) : html`<p>No iteration has finished yet.</p>`, 'reward')}
  ${section(
    'Iterations, policy versions and checkpoints',
    html`${table(['iteration', 'policy after the step', 'reward mean', 'reward std', 'held-out reward', 'judged', 'trainer loss'], iterationRows, 'iterations')}
      <p class="meta">
        Each iteration's step writes checkpoint <code>step-N</code> on the trainer's disk
        (<code>$MOCKWORLD_CHECKPOINT_DIR/${run.runId}/step-N</code>, default under
        <code>$MOCKWORLD_HOME/checkpoints</code>); the policy version is the step the next iteration samples
        from.
      </p>`,
    'iterations',
  )}
  ${section(
    `Every per-iteration metric (${series.size})`,
    html`<div class="chart-grid">
      ${[...series].map(([name, points]) => chart(`chart-${slug(name)}`, metricChartSpec(name, points)))}
    </div>`,
    'metrics',
  )}
  ${usageSection(input.usage)}`;
  return page(run.runId, [{ label: run.runId }], body);
}

/** The rollouts of one iteration grouped by task, with reward, group advantage and verdicts. */
export function iterationPage(input: {
  runId: string;
  iteration: number;
  metrics: IterationMetrics | undefined;
  rollouts: readonly EpisodeRow[];
}): Fragment {
  const judged = input.rollouts.filter((r) => r.judgement);
  const { advantages } = groupAdvantages(
    judged.map((r) => r.judgement!.reward),
    judged.map((r) => r.taskId),
  );
  const advantageOf = new Map(judged.map((r, i) => [r.episodeId, advantages[i]!]));
  const byTask = new Map<string, EpisodeRow[]>();
  for (const r of input.rollouts) byTask.set(r.taskId, [...(byTask.get(r.taskId) ?? []), r]);
  const verdictSummary = (r: EpisodeRow) => {
    const v = r.judgement?.verdicts;
    if (!v) return 'not judged';
    const goals = (v.subGoals ?? []).map((g) => (g.achieved ? '✓' : '✗')).join('');
    const interactions = (v.requiredInteractions ?? []).map((g) => (g.satisfied ? '✓' : '✗')).join('');
    const forbidden = (v.forbidden ?? []).some((f) => f.violated) ? 'forbidden ✗' : 'forbidden ✓';
    return `sub-goals ${goals || '—'} · interactions ${interactions || '—'} · ${forbidden}`;
  };
  const groups = [...byTask].map(
    ([taskId, rollouts]) =>
      html`<article class="group">
        <h3><a href="/tasks/${seg(taskId)}">${taskId}</a></h3>
        ${table(
          ['rollout', 'reward', 'advantage', 'verdicts', 'turns', 'end'],
          rollouts.map((r) => [
            html`<a href="/episodes/${seg(r.episodeId)}">r${r.sampleIndex}</a>`,
            num(r.judgement?.reward),
            num(advantageOf.get(r.episodeId)),
            html`<span class="verdict-summary">${verdictSummary(r)}</span>`,
            r.turns,
            r.endReason ?? 'running',
          ]),
          'rollouts',
        )}
      </article>`,
  );
  const body = html`<p class="meta">
      policy ${input.metrics?.policyVersion ?? '—'} after this iteration · ${input.rollouts.length} rollouts
      of ${byTask.size} tasks · advantages A = (r − mean) / (std + ε) within each task's group
    </p>
    ${groups}`;
  return page(
    `Iteration ${input.iteration}`,
    [{ label: input.runId, href: `/runs/${seg(input.runId)}` }, { label: `iteration ${input.iteration}` }],
    body,
  );
}
