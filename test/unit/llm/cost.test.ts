import { describe, expect, it } from 'vitest';
import { callCost } from '../../../activities/llm/cost.js';
import { ModelEndpointSchema } from '../../../schemas/model-endpoint.js';

describe('the cost of a paid call', () => {
  const prices = { inputPerMillion: 3, cachedInputPerMillion: 0.3, outputPerMillion: 15 };

  it('prices fresh and provider-cached prompt tokens apart, and completion tokens', () => {
    expect(callCost(prices, { promptTokens: 1_000_000, cachedPromptTokens: 0, completionTokens: 0 })).toBe(3);
    expect(
      callCost(prices, { promptTokens: 2000, cachedPromptTokens: 1000, completionTokens: 100 }),
    ).toBeCloseTo((1000 * 3 + 1000 * 0.3 + 100 * 15) / 1e6, 15);
    // Cached input defaults to the input price; a server reporting more cached than prompt tokens is capped.
    expect(
      callCost(
        { inputPerMillion: 2, outputPerMillion: 4 },
        { promptTokens: 10, cachedPromptTokens: 99, completionTokens: 0 },
      ),
    ).toBeCloseTo(20 / 1e6, 15);
  });

  it('is unknown (null), not zero, for an endpoint without prices', () => {
    expect(callCost(undefined, { promptTokens: 10, cachedPromptTokens: 0, completionTokens: 10 })).toBeNull();
  });

  it('takes prices in the endpoint schema and refuses negative or unknown ones', () => {
    const endpoint = { baseUrl: 'http://127.0.0.1:1/v1', model: 'm' };
    expect(ModelEndpointSchema.parse({ ...endpoint, prices }).prices).toEqual(prices);
    expect(
      ModelEndpointSchema.safeParse({ ...endpoint, prices: { ...prices, outputPerMillion: -1 } }).success,
    ).toBe(false);
    expect(ModelEndpointSchema.safeParse({ ...endpoint, prices: { ...prices, perRequest: 1 } }).success).toBe(
      false,
    );
  });
});
