import { describe, expect, it } from 'vitest';
import {
  cosineDistance,
  ProtocolInputError,
  selectDiverseResponses,
} from '../../../activities/study/protocols/index.js';

describe('cosine distance', () => {
  it('is 0 for the same direction, 1 for orthogonal and 2 for opposite vectors', () => {
    expect(cosineDistance([2, 0], [5, 0])).toBeCloseTo(0, 12);
    expect(cosineDistance([1, 0], [0, 3])).toBeCloseTo(1, 12);
    expect(cosineDistance([1, 1], [-2, -2])).toBeCloseTo(2, 12);
  });
});

describe('embedding-based selection (greedy farthest point)', () => {
  // Hand-checked: distances from v0 = (1, 0): v1 ≈ 0.005, v2 = 1, v3 = 2, v4 ≈ 0.293.
  // r = 2 adds v3 (farthest from v0). r = 3: nearest-selected distances v1 ≈ 0.005, v2 = 1,
  // v4 ≈ 0.293 → v2. r = 4: v1 ≈ 0.005, v4 ≈ 0.293 → v4. RS would take [0, 1] at r = 2.
  const pool = [
    [1, 0],
    [1, 0.1],
    [0, 1],
    [-1, 0],
    [0.7, 0.7],
  ];

  it('picks the hand-checked sets, returned in pool order', () => {
    expect(selectDiverseResponses(pool, 1)).toEqual([0]);
    expect(selectDiverseResponses(pool, 2)).toEqual([0, 3]);
    expect(selectDiverseResponses(pool, 3)).toEqual([0, 2, 3]);
    expect(selectDiverseResponses(pool, 4)).toEqual([0, 2, 3, 4]);
    expect(selectDiverseResponses(pool, 5)).toEqual([0, 1, 2, 3, 4]);
  });

  it('breaks ties by pool order', () => {
    expect(
      selectDiverseResponses(
        [
          [1, 0],
          [0, 1],
          [0, -1],
        ],
        2,
      ),
    ).toEqual([0, 1]);
    expect(
      selectDiverseResponses(
        [
          [1, 0],
          [0, -1],
          [0, 1],
        ],
        2,
      ),
    ).toEqual([0, 1]);
    expect(
      selectDiverseResponses(
        [
          [1, 0],
          [1, 0],
          [1, 0],
        ],
        2,
      ),
    ).toEqual([0, 1]);
  });

  it('matches RS at the endpoints and is deterministic and nested on random pools of 32', () => {
    let state = 7;
    const random = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31 - 0.5;
    for (let trial = 0; trial < 20; trial += 1) {
      const embeddings = Array.from({ length: 32 }, () => Array.from({ length: 16 }, random));
      expect(selectDiverseResponses(embeddings, 1)).toEqual([0]);
      expect(selectDiverseResponses(embeddings, 32)).toEqual(Array.from({ length: 32 }, (_, i) => i));
      let previous = new Set([0]);
      for (const r of [2, 4, 8, 16]) {
        const picked = selectDiverseResponses(embeddings, r);
        expect(picked).toHaveLength(r);
        expect(picked).toEqual([...picked].sort((a, b) => a - b));
        expect(picked).toEqual(
          selectDiverseResponses(
            embeddings.map((e) => [...e]),
            r,
          ),
        );
        expect([...previous].every((i) => picked.includes(i))).toBe(true);
        previous = new Set(picked);
      }
    }
  });

  it('takes the whole pool when it is shorter than r, as RS does, and nothing from an empty pool', () => {
    expect(selectDiverseResponses(pool.slice(0, 3), 8)).toEqual([0, 1, 2]);
    expect(selectDiverseResponses([], 4)).toEqual([]);
  });

  it('refuses a bad r and bad embeddings', () => {
    expect(() => selectDiverseResponses(pool, 0)).toThrow(ProtocolInputError);
    expect(() => selectDiverseResponses(pool, 1.5)).toThrow(ProtocolInputError);
    expect(() =>
      selectDiverseResponses(
        [
          [1, 0],
          [1, 0, 0],
        ],
        2,
      ),
    ).toThrow(/dimensions/);
    expect(() =>
      selectDiverseResponses(
        [
          [1, 0],
          [0, 0],
        ],
        2,
      ),
    ).toThrow(/zero vector/);
    expect(() =>
      selectDiverseResponses(
        [
          [1, 0],
          [NaN, 1],
        ],
        2,
      ),
    ).toThrow(/non-finite/);
  });
});
