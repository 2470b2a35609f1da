import { embeddedToyLabel } from '../../activities/llm/default-endpoint.js';
import { standingLine, type JudgeStanding } from '../../schemas/judge-controls.js';
import { html, href, json, page, section, seg, table, usd, when, type Fragment } from './html.js';
import type { RoleUsageRow, RunRow } from './runs-queries.js';

/** Where a run's page in the Temporal UI is. */
export interface TemporalUi {
  /** Base URL of the Temporal UI, e.g. http://localhost:8233. */
  readonly url: string;
  readonly namespace: string;
}

/** The run's page in the Temporal UI. */
export function temporalLink(ui: TemporalUi, runId: string): string {
  return `${ui.url.replace(/\/+$/, '')}/namespaces/${seg(ui.namespace)}/workflows/${seg(runId)}`;
}

const progress = (r: RunRow) => (r.total === null ? `${r.done} ${r.unit}` : `${r.done}/${r.total} ${r.unit}`);

/** The start page: every run with kind, state, progress, start time, usage, cost and links. */
export function runsPage(runs: readonly RunRow[], ui: TemporalUi): Fragment {
  const body = runs.length
    ? table(
        ['run', 'kind', 'state', 'progress', 'started', 'model calls', 'tokens', 'cost', 'Temporal'],
        runs.map((r) => [
          html`<a href="${href(`/runs/${seg(r.runId)}`)}">${r.runId}</a>`,
          r.kind,
          html`<span class="state ${r.state}" title="${r.pauseReason ?? ''}">${r.state}</span
            >${r.pauseReason ? html`<div class="pause-reason">${r.pauseReason}</div>` : ''}`,
          progress(r),
          when(r.createdAt),
          r.calls,
          r.tokens.toLocaleString('en-US'),
          usd(r.costUsd),
          html`<a href="${temporalLink(ui, r.runId)}" target="_blank" rel="noopener">workflow</a>`,
        ]),
        'runs',
      )
    : html`<p>No run yet: start one with <code>mockworld start spec.yaml</code> or from the Temporal UI.</p>`;
  return page('Runs', [], body);
}

/** Model usage by role with the run's total (tokens and, where priced, cost). */
export function usageSection(usage: readonly RoleUsageRow[]): Fragment {
  if (usage.length === 0) return section('Model usage', html`<p>No paid model call yet.</p>`, 'usage');
  const total = usage.reduce(
    (t, u) => ({
      calls: t.calls + u.calls,
      batched: t.batched + u.batchedCalls,
      prompt: t.prompt + u.promptTokens,
      completion: t.completion + u.completionTokens,
      cost: u.costUsd === null ? t.cost : (t.cost ?? 0) + u.costUsd,
    }),
    { calls: 0, batched: 0, prompt: 0, completion: 0, cost: null as number | null },
  );
  return section(
    'Model usage',
    table(
      ['role', 'calls', 'in batch jobs', 'prompt tokens', 'completion tokens', 'cost'],
      [
        ...usage.map((u) => [
          u.role,
          u.calls,
          u.batchedCalls,
          u.promptTokens,
          u.completionTokens,
          usd(u.costUsd),
        ]),
        [html`<b>run</b>`, total.calls, total.batched, total.prompt, total.completion, usd(total.cost)],
      ],
      'usage',
    ),
    'usage',
  );
}

/**
 * The header block of every run page: state, the Temporal UI link, the spec (specs hold no
 * secrets: an endpoint names the variable of its key, never the key).
 */
export function runHeader(
  run: {
    runId: string;
    kind: string;
    state: string;
    spec?: unknown;
    pauseReason?: string | null;
    /** Roles the embedded toy model answered: the page says its figures are a toy's. */
    toyRoles?: readonly string[];
    /** The rubric judge by its controls, where the run's figures rest on one. */
    judge?: JudgeStanding;
  },
  ui: TemporalUi,
): Fragment {
  return html`<p class="run-header">
      ${run.kind} run · <span class="state ${run.state}">${run.state}</span> ·
      <a href="${temporalLink(ui, run.runId)}" target="_blank" rel="noopener">open in the Temporal UI</a>
    </p>
    ${run.pauseReason ? html`<p class="pause-reason">Paused by itself: ${run.pauseReason}</p>` : ''}
    ${run.toyRoles?.length ? html`<p class="warning" role="alert">${embeddedToyLabel(run.toyRoles)}</p>` : ''}
    ${
      run.judge === undefined
        ? ''
        : run.judge.unreliable
          ? html`<p class="warning judge-standing" role="alert">${standingLine(run.judge)}</p>`
          : html`<p class="meta judge-standing">${standingLine(run.judge)}</p>`
    }
    ${
      run.spec === undefined
        ? ''
        : html`<details class="spec">
            <summary>spec</summary>
            ${json(run.spec)}
          </details>`
    }`;
}
