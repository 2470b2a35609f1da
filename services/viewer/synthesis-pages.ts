import type { EpisodeRow } from './episode-queries.js';
import { html, href, json, page, section, seg, table, type Fragment } from './html.js';
import { runHeader, usageSection, type TemporalUi } from './runs-page.js';
import type { RoleUsageRow } from './runs-queries.js';
import {
  TASK_PAGE,
  type MappingRow,
  type TaskDetail,
  type TaskFilter,
  type TaskListRow,
} from './synthesis-queries.js';
import { transcript } from './transcript.js';

/** A synthesis run: counts, usage, the task list filtered by stage and rejection reason. */
export function synthesisRunPage(input: {
  /** The run as its header shows it, the coverage judge's standing included. */
  run: Parameters<typeof runHeader>[0];
  ui: TemporalUi;
  tasks: readonly TaskListRow[];
  facets: { stages: Map<string, number>; reasons: Map<string, number> };
  filter: TaskFilter;
  usage: readonly RoleUsageRow[];
}): Fragment {
  const { run, tasks, facets, filter } = input;
  const base = `/runs/${seg(run.runId)}`;
  const choice = (label: string, query: TaskFilter, active: boolean) =>
    html`<a
      class="facet ${active ? 'active' : ''}"
      href="${href(base, { stage: query.stage, reason: query.reason })}"
      >${label}</a
    >`;
  const filters = html`<div class="filters">
    <div>
      stage: ${choice('all', { reason: filter.reason }, !filter.stage)}
      ${[...facets.stages].map(([stage, n]) =>
        choice(`${stage} (${n})`, { stage, reason: filter.reason }, filter.stage === stage),
      )}
    </div>
    <div>
      rejection reason: ${choice('any', { stage: filter.stage }, !filter.reason)}
      ${[...facets.reasons].map(([reason, n]) =>
        choice(`${reason} (${n})`, { stage: filter.stage, reason }, filter.reason === reason),
      )}
    </div>
  </div>`;
  const next =
    tasks.length === TASK_PAGE
      ? html`<p>
          <a href="${href(base, { ...filter, after: tasks.at(-1)!.idx })}">next ${TASK_PAGE} tasks</a>
        </p>`
      : '';
  const shown = tasks.length ? `tasks ${tasks[0]!.idx}–${tasks.at(-1)!.idx}` : 'no tasks';
  const total = [...facets.stages.values()].reduce((a, b) => a + b, 0);
  const list = table(
    ['task', 'persona', 'stage', 'rejection', 'instruction'],
    tasks.map((t) => [
      html`<a href="/tasks/${seg(t.taskId)}">${t.idx}</a>`,
      t.personaId,
      t.stage,
      t.rejectReason ? html`<span title="${t.rejectDetail ?? ''}">${t.rejectReason}</span>` : '',
      t.instruction ?? '',
    ]),
    'tasks',
  );
  return page(
    run.runId,
    [{ label: run.runId }],
    html`${runHeader(run, input.ui)}
    ${section(`Tasks (${total}): ${shown}`, html`${filters} ${list} ${next}`, 'tasks')}
    ${usageSection(input.usage)}`,
  );
}

/** Tool specs as a list: name, description, and the parameter schema. */
function toolList(tools: unknown): Fragment {
  if (!Array.isArray(tools) || tools.length === 0) return html`<p>none</p>`;
  return html`<div class="tools">
    ${tools.map((t: any) => {
      const fn = t?.function ?? t;
      return html`<details class="tool" open>
        <summary><code>${String(fn?.name ?? '?')}</code> — ${String(fn?.description ?? '')}</summary>
        ${json(fn?.parameters ?? {})}
      </details>`;
    })}
  </div>`;
}

const list = (items: unknown) =>
  Array.isArray(items) && items.length
    ? html`<ol>
        ${items.map((i) => html`<li>${typeof i === 'string' ? i : JSON.stringify(i)}</li>`)}
      </ol>`
    : html`<p>none</p>`;

/** One synthesized task: every artefact, its demonstrations as transcripts, its tool mapping. */
export function taskPage(
  task: TaskDetail,
  demonstrations: readonly EpisodeRow[],
  mapping: readonly MappingRow[],
): Fragment {
  const rubric = (task.rubric ?? {}) as {
    subGoals?: string[];
    requiredInteractions?: string[];
    forbidden?: string[];
  };
  const coverage = Array.isArray(task.coverage)
    ? (task.coverage as {
        episodeId: string;
        fraction: number;
        kept: boolean;
        executedSteps: number[];
        rejected?: string;
      }[])
    : [];
  const outcome = task.rejectReason
    ? html`<p class="rejected">
        ${task.stage}: <b>${task.rejectReason}</b> ${task.failedStage ? `(in stage ${task.failedStage})` : ''}
        — ${task.rejectDetail ?? ''}
      </p>`
    : html`<p>stage: <b>${task.stage}</b></p>`;
  const body = html`${outcome}
  ${section('Persona', html`<p>${task.personaId}: ${task.persona ?? '(persona text not stored: imported dataset)'}</p>`, 'persona')}
  ${section('Instruction (what the agent sees)', html`<blockquote class="instruction">${task.instruction ?? '—'}</blockquote>`, 'instruction')}
  ${section('Hidden context (only the simulated user knows it)', html`<blockquote class="hidden-context">${task.hiddenContext ?? '—'}</blockquote>`, 'hidden-context')}
  ${section(
    'Scenario and over-specified request',
    html`<p>${task.scenario ?? '—'}</p>
      <p>${task.request ?? ''}</p>`,
  )}
  ${section('Workflow', list(task.workflow), 'workflow')}
  ${section('Forbidden behaviours', list(task.forbidden), 'forbidden')}
  ${section(
    'Rubric',
    html`<h3>Sub-goals</h3>
      ${list(rubric.subGoals)}
      <h3>Required user interactions</h3>
      ${list(rubric.requiredInteractions)}
      <h3>Forbidden</h3>
      ${list(rubric.forbidden)}`,
    'rubric',
  )}
  ${section('Tools the agent is given', toolList(task.tools), 'tools')}
  ${task.refinement ? section('Refinement (removed tools, distractors)', json(task.refinement)) : ''}
  ${task.toolRepairs ? section('Tool-set repairs', json(task.toolRepairs)) : ''}
  ${section(
    `Demonstrations (${demonstrations.length})`,
    html`${demonstrations.map((d) => {
      const c = coverage.find((x) => x.episodeId === d.episodeId);
      return html`<article class="demonstration">
        <h3>Demonstration ${d.sampleIndex}</h3>
        ${
          c
            ? html`<p class="coverage">
                coverage ${(c.fraction * 100).toFixed(0)}% (steps ${c.executedSteps.join(', ') || 'none'}) ·
                ${c.kept ? 'kept' : `dropped${c.rejected ? `: ${c.rejected}` : ''}`}
              </p>`
            : ''
        }
        ${transcript(d, mapping, task.rubric)}
      </article>`;
    })}`,
    'demonstrations',
  )}
  ${section(
    `Tool mapping (${mapping.length} entries)`,
    table(
      ['tool', 'arguments', 'response', 'source'],
      mapping.map((m) => [
        m.tool,
        json(m.args),
        json(m.response),
        m.source === 'equivalent' ? `equivalent of ${m.equivalentTo?.slice(0, 12)}…` : m.source,
      ]),
      'mapping',
    ),
    'mapping',
  )}
  ${
    task.provenance
      ? section(
          'Provenance',
          html`<details>
            <summary>models, template versions, tokens by role</summary>
            ${json(task.provenance)}
          </details>`,
        )
      : ''
  }`;
  return page(
    `Task ${task.idx}`,
    [{ label: task.runId, href: `/runs/${seg(task.runId)}` }, { label: `task ${task.idx}` }],
    body,
  );
}
