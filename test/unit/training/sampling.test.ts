import { describe, expect, it } from 'vitest';
import {
  iterationSlice,
  mixSeed,
  mulberry32,
  seededShuffle,
  splitHeldOut,
} from '../../../activities/training/index.js';

const TASKS = Array.from({ length: 12 }, (_, i) => `task-${i}`);

describe('seeded task sampling', () => {
  it('draws the same numbers from the same seed and different ones from another seed', () => {
    const a = mulberry32(7);
    const b = mulberry32(7);
    const c = mulberry32(8);
    const drawsA = Array.from({ length: 5 }, a);
    expect(Array.from({ length: 5 }, b)).toEqual(drawsA);
    expect(Array.from({ length: 5 }, c)).not.toEqual(drawsA);
    drawsA.forEach((x) => expect(x >= 0 && x < 1).toBe(true));
  });

  it('shuffles deterministically into a permutation of the input, leaving the input untouched', () => {
    const copy = [...TASKS];
    const shuffled = seededShuffle(TASKS, 42);
    expect(seededShuffle(TASKS, 42)).toEqual(shuffled);
    expect([...shuffled].sort()).toEqual([...TASKS].sort());
    expect(shuffled).not.toEqual(TASKS);
    expect(TASKS).toEqual(copy);
  });

  it('mixes seed parts so that nearby seeds and epochs differ, and keeps bits above 2^32', () => {
    expect(mixSeed(0, 1)).not.toBe(mixSeed(1, 0));
    expect(mixSeed(3, 5, 0)).not.toBe(mixSeed(3, 5, 1));
    expect(mixSeed(2 ** 32 + 1)).not.toBe(mixSeed(1));
    expect(() => mixSeed(-1)).toThrow(RangeError);
  });

  it('holds out a seeded, disjoint set and keeps the training set in the given order', () => {
    const { heldOut, train } = splitHeldOut(TASKS, 3, 5);
    expect(heldOut).toHaveLength(3);
    expect(train).toHaveLength(9);
    expect(heldOut.filter((t) => train.includes(t))).toEqual([]);
    expect([...heldOut, ...train].sort()).toEqual([...TASKS].sort());
    expect(train).toEqual(TASKS.filter((t) => !heldOut.includes(t)));
    expect(splitHeldOut(TASKS, 3, 5)).toEqual({ heldOut, train });
    expect(splitHeldOut(TASKS, 3, 6).heldOut).not.toEqual(heldOut);
    expect(splitHeldOut(TASKS, 0, 5)).toEqual({ heldOut: [], train: TASKS });
    expect(() => splitHeldOut(TASKS, 13, 5)).toThrow(/cannot hold out 13 of 12/);
  });

  it('covers every training task exactly once per epoch when the batch divides the set, in a new order each epoch', () => {
    const perEpoch = (epoch: number) =>
      [0, 1, 2].flatMap((k) => {
        const slice = iterationSlice(TASKS, 4, epoch * 3 + k, 9);
        expect(slice.epoch).toBe(epoch);
        expect(slice.iterationsPerEpoch).toBe(3);
        return slice.items;
      });
    const first = perEpoch(0);
    const second = perEpoch(1);
    expect([...first].sort()).toEqual([...TASKS].sort());
    expect([...second].sort()).toEqual([...TASKS].sort());
    expect(second).not.toEqual(first);
    expect(iterationSlice(TASKS, 4, 4, 9)).toEqual(iterationSlice(TASKS, 4, 4, 9));
  });

  it('fills a short last slice from the same epoch so every iteration has B distinct tasks and the epoch covers all', () => {
    // 12 tasks, B = 5: 3 iterations per epoch, the last one wraps to the start of the permutation.
    const slices = [0, 1, 2].map((i) => iterationSlice(TASKS, 5, i, 1));
    slices.forEach((s) => {
      expect(s.items).toHaveLength(5);
      expect(new Set(s.items).size).toBe(5);
      expect(s.epoch).toBe(0);
      expect(s.iterationsPerEpoch).toBe(3);
    });
    expect(new Set(slices.flatMap((s) => s.items)).size).toBe(12);
    expect(iterationSlice(TASKS, 5, 3, 1).epoch).toBe(1);
  });

  it('refuses a batch larger than the training set, which would repeat a task in one iteration', () => {
    expect(() => iterationSlice(TASKS, 13, 0, 0)).toThrow(/exceeds the 12 training tasks/);
    expect(() => iterationSlice(TASKS, 4, -1, 0)).toThrow(RangeError);
  });
});
