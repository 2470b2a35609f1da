import { defineQuery } from '@temporalio/workflow';
import { described } from './described.js';

/** State of one cell of a study's grid. */
export type CellState = 'queued' | 'running' | 'done' | 'failed';

/** Every cell of the grid and its state (cell id → state): the study's per-task status. */
export const cellStatesQuery = described(
  defineQuery<Record<string, CellState>>('cellStates'),
  'Every cell of the study grid and its state: queued, running, done, failed.',
);
