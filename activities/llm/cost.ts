import type { CompletionUsage } from 'openai/resources/completions';
import type { ModelPrices } from '../../schemas/model-endpoint.js';

/** Token counts of one answer as the server reported them. */
export interface CallTokens {
  readonly promptTokens: number;
  /** Of the prompt tokens, those the provider served from its prompt cache (priced apart). */
  readonly cachedPromptTokens: number;
  readonly completionTokens: number;
}

/**
 * What one answer cost at `prices` (USD per million tokens), or null when the endpoint has no
 * prices: unknown, which is not the same as free.
 */
export function callCost(prices: ModelPrices | undefined, tokens: CallTokens): number | null {
  if (!prices) return null;
  const cached = Math.min(tokens.cachedPromptTokens, tokens.promptTokens);
  const fresh = tokens.promptTokens - cached;
  const cachedPrice = prices.cachedInputPerMillion ?? prices.inputPerMillion;
  return (
    (fresh * prices.inputPerMillion +
      cached * cachedPrice +
      tokens.completionTokens * prices.outputPerMillion) /
    1e6
  );
}

/** The answer's tokens as the server reported them, and their cost at the endpoint's prices. */
export function pricedTokens(prices: ModelPrices | undefined, usage: CompletionUsage | undefined) {
  const tokens = {
    promptTokens: usage?.prompt_tokens ?? 0,
    cachedPromptTokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
    completionTokens: usage?.completion_tokens ?? 0,
  };
  return { ...tokens, costUsd: callCost(prices, tokens) };
}
