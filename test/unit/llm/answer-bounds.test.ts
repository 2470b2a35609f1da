import { describe, expect, it } from 'vitest';
import { boundedAnswer, cutWithMarker } from '../../../activities/llm/answer-bounds.js';
import type { ChatCompletionMessage } from '../../../activities/llm/types.js';
import { BOUNDS, utf8Bytes } from '../../../schemas/bounds.js';

describe('cut markers', () => {
  const huge = 'x'.repeat(3_000_018);

  it('the ledger cuts an over-size answer to its bound and says how large the answer was', () => {
    const { message, finishReason } = boundedAnswer(
      { role: 'assistant', content: huge } as ChatCompletionMessage,
      'stop',
    );
    expect(finishReason).toBe('mockworld_oversized');
    expect(utf8Bytes(message.content!)).toBeLessThanOrEqual(BOUNDS.answerBytes);
    expect(message.content).toMatch(/… \[cut: 3000018 bytes, over the 262144-byte bound\]$/);
  });

  it('a second cut at a smaller bound still states the size of the model answer', () => {
    const ledger = cutWithMarker(huge, BOUNDS.answerBytes);
    const turn = cutWithMarker(ledger, BOUNDS.agentTurnBytes);
    expect(utf8Bytes(turn)).toBeLessThanOrEqual(BOUNDS.agentTurnBytes);
    expect(turn).toMatch(/x… \[cut: 3000018 bytes, over the 65536-byte bound\]$/);
    expect(turn.match(/\[cut:/g)).toHaveLength(1); // one marker, not one per cut
  });

  it('leaves text within the bound as it is, marker-like endings included', () => {
    const text = 'short … [cut: 5 bytes, over the 1-byte bound]';
    expect(cutWithMarker(text, 1_000)).toBe(text);
  });
});
