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
