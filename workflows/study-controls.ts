import { defineQuery } from '@temporalio/workflow';

/** State of one cell of a study's grid. */
export type CellState = 'queued' | 'running' | 'done' | 'failed';

/** Every cell of the grid and its state (cell id → state): the study's per-task status. */
export const cellStatesQuery = defineQuery<Record<string, CellState>>('cellStates');
