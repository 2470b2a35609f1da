/**
 * The agent's response length, as VERL bounds a multi-turn rollout (seed App. A: "a maximum
 * response length of 13,000 tokens"): everything after the opening prompt counts — the agent's
 * turns and the observations between them — in the serving engine's own tokens, read from the
 * usage it reports (no tokenizer on the CPU worker). Pure.
 */
import type { ModelRole } from '../../schemas/model-endpoint.js';
import { isOversized } from '../llm/answer-bounds.js';
import type { TokenUsage } from '../llm/index.js';

/**
 * True when a turn stopped at its token limit (`length`) or was cut at the answer bound: the agent
 * was interrupted, so whatever it wrote is not a finished turn (never a final answer).
 */
export function isCutTurn(finishReason: string): boolean {
  return finishReason === 'length' || isOversized(finishReason);
}

/**
 * The agent role for its next turn: `maxTokens` lowered to what is left of `maxResponseTokens`
 * (unchanged when the cap is unset or further than a turn's limit, so the request and its cache
 * key are what they were without a cap).
 */
export function agentForTurn(
  agent: ModelRole,
  maxResponseTokens: number | undefined,
  responseTokens: number,
): ModelRole {
  if (maxResponseTokens === undefined) return agent;
  const left = Math.max(1, maxResponseTokens - responseTokens);
  return left >= agent.sampling.maxTokens
    ? agent
    : { ...agent, sampling: { ...agent.sampling, maxTokens: left } };
}

/**
 * The response length after a turn: its call's prompt (the whole transcript so far) plus its
 * completion, minus the opening prompt (the first call's prompt tokens). An engine that reports no
 * usage counts 0, and such an episode is never cut by the cap.
 */
export function responseTokensAfter(openingTokens: number, usage: TokenUsage): number {
  return Math.max(0, usage.promptTokens + usage.completionTokens - openingTokens);
}
