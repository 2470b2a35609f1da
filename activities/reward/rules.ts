import type { RubricRule } from '../../schemas/rubric-rules.js';
import { ASK_USER_TOOL_NAME } from '../world/ask-user.js';

/** A message of a stored episode, as far as a rule reads it. */
export interface RuleMessage {
  readonly role: string;
  readonly content?: unknown;
  readonly tool_calls?: readonly {
    readonly function: { readonly name: string; readonly arguments: string };
  }[];
}

/** A rule's verdict on a trajectory, with the part of it that decided (empty when it does not hold). */
export interface RuleVerdict {
  readonly holds: boolean;
  readonly evidence: string;
}

/** Longest evidence quote kept with a rule's verdict (as the judge's: MAX_EVIDENCE_CHARS). */
const EVIDENCE_CHARS = 300;

/**
 * Decides one rubric rule from an episode's messages alone, deterministically: the same
 * trajectory always gets the same verdict, so a rule-checked item has no judge variance.
 */
export function checkRule(rule: RubricRule, messages: readonly RuleMessage[]): RuleVerdict {
  switch (rule.kind) {
    case 'called':
      return firstHit(callsOf(messages, rule.tool), (args, raw) =>
        argumentsMatch(args, rule.args ?? {}) ? `${rule.tool}(${raw})` : undefined,
      );
    case 'asked': {
      const pattern = new RegExp(rule.matches, 'i');
      return firstHit(callsOf(messages, ASK_USER_TOOL_NAME), (args) => {
        const question = typeof args?.['question'] === 'string' ? args['question'] : '';
        return pattern.test(question) ? question : undefined;
      });
    }
    case 'said': {
      const pattern = new RegExp(rule.matches, 'i');
      const text = messages.filter((m) => m.role === 'assistant').map((m) => textOf(m.content));
      const hit = text.find((t) => pattern.test(t));
      return hit === undefined ? miss() : { holds: true, evidence: clip(hit) };
    }
  }
}

type ParsedArgs = Record<string, unknown> | undefined;

/** The agent's calls of `tool`, with their arguments parsed (undefined when not a JSON object). */
function callsOf(messages: readonly RuleMessage[], tool: string): [ParsedArgs, string][] {
  return messages
    .filter((m) => m.role === 'assistant')
    .flatMap((m) => m.tool_calls ?? [])
    .filter((call) => call.function.name === tool)
    .map((call) => [parseObject(call.function.arguments), call.function.arguments]);
}

function firstHit(
  calls: [ParsedArgs, string][],
  evidenceOf: (args: ParsedArgs, raw: string) => string | undefined,
): RuleVerdict {
  for (const [args, raw] of calls) {
    const evidence = evidenceOf(args, raw);
    if (evidence !== undefined) return { holds: true, evidence: clip(evidence) };
  }
  return miss();
}

const miss = (): RuleVerdict => ({ holds: false, evidence: '' });

/** Every expected argument is present with an equal value: strings trimmed, case-insensitive. */
function argumentsMatch(actual: ParsedArgs, expected: Record<string, string | number | boolean>): boolean {
  return Object.entries(expected).every(
    ([name, value]) => actual !== undefined && normalize(actual[name]) === normalize(value),
  );
}

function normalize(value: unknown): string | undefined {
  if (typeof value === 'string') return value.trim().toLowerCase();
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

function parseObject(json: string): ParsedArgs {
  try {
    const value: unknown = JSON.parse(json);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (part as { text?: string }).text ?? '').join('');
  return '';
}

function clip(text: string): string {
  return text.length > EVIDENCE_CHARS ? `${text.slice(0, EVIDENCE_CHARS - 1)}…` : text;
}
