/**
 * One episode as a chat transcript: the instruction, each assistant turn with its tool calls,
 * and under each call the answer with where it came from (the task's mapping, the tool simulator
 * in this episode, an equivalent entry, the user simulator, or an error observation), then the
 * judge's verdicts against the rubric.
 */
import { argsKey } from '../../activities/world/canonical-args.js';
import type { EpisodeRow, JudgementRow } from './episode-queries.js';
import { html, num, table, type Fragment } from './html.js';
import type { MappingRow } from './synthesis-queries.js';

const ASK_USER = 'ask_user';

interface Call {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((p) => (p && typeof p.text === 'string' ? p.text : '')).join('')
      : '';

function callsOf(message: Record<string, unknown>): Call[] {
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  return calls.map((c: Record<string, any>) => ({
    id: String(c.id ?? ''),
    name: String(c.function?.name ?? c.custom?.name ?? ''),
    arguments: String(c.function?.arguments ?? c.custom?.input ?? ''),
  }));
}

function parsedArgs(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Where the answer to `call` came from, judged from the task's mapping and the episode's start. */
function provenance(call: Call, episode: EpisodeRow, mapping: ReadonlyMap<string, MappingRow>): string {
  if (call.name === ASK_USER) return 'user simulator';
  const args = parsedArgs(call.arguments);
  const entry = args === undefined ? undefined : mapping.get(`${call.name}\u0000${argsKey(args)}`);
  if (!entry) return 'error observation (no mapping entry: the call was refused or the simulator failed)';
  if (entry.createdAt < episode.createdAt) return 'from the mapping (entry existed before this episode)';
  // Entries are written when first simulated: one made after this episode began was made by it
  // (or by an episode of the same task running beside it).
  return entry.source === 'equivalent'
    ? 'new mapping entry while this episode ran: the simulator reused an equivalent entry'
    : 'new mapping entry while this episode ran: simulated';
}

/** Renders the transcript; `mapping` is the task's, `rubric` the task's rubric (for verdict texts). */
export function transcript(episode: EpisodeRow, mapping: readonly MappingRow[], rubric: unknown): Fragment {
  const byKey = new Map(mapping.map((m) => [`${m.tool}\u0000${m.argsKey}`, m]));
  const answers = new Map<string, string>();
  for (const m of episode.messages)
    if (m.role === 'tool') answers.set(String(m.tool_call_id), textOf(m.content));
  const turns = episode.messages.map((m) => {
    const role = String(m.role);
    if (role === 'tool') return html``; // shown under the call it answers
    const calls = role === 'assistant' ? callsOf(m) : [];
    if (role === 'system')
      return html`<details class="msg system">
        <summary class="who">system prompt</summary>
        <div class="text">${textOf(m.content)}</div>
      </details>`;
    return html`<div class="msg ${role}">
      <div class="who">${role === 'user' ? 'user (instruction)' : role}</div>
      ${textOf(m.content) ? html`<div class="text">${textOf(m.content)}</div>` : ''}
      ${calls.map((call) => {
        const from = provenance(call, episode, byKey);
        const answer = answers.get(call.id);
        return html`<div class="tool-call" data-tool="${call.name}">
          <div class="call"><span class="fn">${call.name}</span>(<code>${call.arguments}</code>)</div>
          <div class="answer ${call.name === ASK_USER ? 'user-sim' : 'tool-sim'}">
            <span class="source">${from}</span>
            <pre>${answer ?? '(no answer recorded)'}</pre>
          </div>
        </div>`;
      })}
    </div>`;
  });
  return html`<div class="transcript" data-episode="${episode.episodeId}">
    <p class="meta">
      ${episode.purpose} ${episode.sampleIndex} · policy ${episode.policyVersion} · ${episode.turns} turns,
      ${episode.toolCalls} tool calls, ${episode.userQuestions} user questions, ${episode.toolErrors} tool
      errors · ended: ${episode.endReason ?? 'running'}${episode.endDetail ? ` (${episode.endDetail})` : ''}
    </p>
    ${turns} ${episode.judgement ? verdicts(episode.judgement, rubric) : html`<p class="meta">not judged</p>`}
  </div>`;
}

/**
 * The verdicts per forbidden behaviour, sub-goal and required interaction, each with the checker
 * that gave it (the judge, or a rubric rule), and the reward.
 */
export function verdicts(judgement: JudgementRow, rubric: unknown): Fragment {
  const r = (rubric ?? {}) as { forbidden?: string[]; subGoals?: string[]; requiredInteractions?: string[] };
  const v = judgement.verdicts ?? {};
  const rows = [
    ...(v.forbidden ?? []).map((x) => [
      'forbidden',
      r.forbidden?.[x.index] ?? `#${x.index}`,
      x.violated ? '✗ violated' : '✓ not violated',
      x.evidence ?? '',
      x.checker ?? 'judge',
    ]),
    ...(v.subGoals ?? []).map((x) => [
      'sub-goal',
      r.subGoals?.[x.index] ?? `#${x.index}`,
      x.achieved ? '✓ achieved' : '✗ not achieved',
      x.evidence ?? '',
      x.checker ?? 'judge',
    ]),
    ...(v.requiredInteractions ?? []).map((x) => [
      'interaction',
      r.requiredInteractions?.[x.index] ?? `#${x.index}`,
      x.satisfied ? '✓ satisfied' : '✗ not satisfied',
      x.evidence ?? '',
      x.checker ?? 'judge',
    ]),
  ];
  return html`<div class="verdicts">
    <h3>Judge (${judgement.judgeModel}): reward ${num(judgement.reward)}</h3>
    <p class="meta">
      forbidden violated: ${judgement.forbiddenViolated ? 'yes' : 'no'} · sub-goals
      ${num(judgement.subGoalFraction, 2)} · interactions ${num(judgement.interactionFraction, 2)}
    </p>
    ${table(['kind', 'rubric item', 'verdict', 'evidence', 'checked by'], rows, 'verdict-table')}
  </div>`;
}
