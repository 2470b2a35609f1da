import type pg from 'pg';
import type { FunctionTool } from '../../schemas/function-tool.js';
import { SingleFlight } from '../llm/single-flight.js';
import { argsKey } from './canonical-args.js';
import { toolMapping } from '../telemetry/metrics.js';
import { findEntry, insertIfAbsent, recentEntries, type MappingEntry } from './mapping-store.js';
import { simulateToolCall, type ToolSimulatorOptions } from './tool-simulator.js';

/** Entries of one tool shown to the simulator by default: the newest ones. */
export const DEFAULT_SHOWN_ENTRIES = 40;

/** Settings of {@link resolveToolCall}. */
export interface ToolMappingOptions extends ToolSimulatorOptions {
  /** PostgreSQL holding `tool_mappings`. */
  readonly pool: pg.Pool;
  /** Newest entries of the tool shown to the simulator. Default {@link DEFAULT_SHOWN_ENTRIES}. */
  readonly shownEntries?: number;
}

/** The task a call belongs to. */
export interface MappingTask {
  readonly taskId: string;
  /** The agent-visible instruction I, given to the simulator as context. */
  readonly instruction: string;
}

/** The response to a call and where it came from. */
export interface ToolResolution {
  /** The stored entry; its `response` is what the agent sees. */
  readonly entry: MappingEntry;
  /** True when the mapping already held this exact call (no simulator call by this caller). */
  readonly exactHit: boolean;
}

/** Simulations in progress in this process, so concurrent rollouts of a task pay once per call. */
const flights = new SingleFlight<ToolResolution>();

/** A number per pool, so flights on two databases (tests) never join each other. */
const poolIds = new WeakMap<pg.Pool, number>();

function poolId(pool: pg.Pool): number {
  let id = poolIds.get(pool);
  if (id === undefined) poolIds.set(pool, (id = nextPoolId++));
  return id;
}
let nextPoolId = 0;

/**
 * The response of the task's mock tool to a validated call (seed §3.2, eq. 4). An exact
 * (task, tool, args_key) match answers without a model call. Otherwise the simulator sees the
 * tool's newest entries and reuses an equivalent one or creates a response, and the entry is
 * inserted if absent: the first writer wins and every rollout, in any process, gets that row.
 */
export async function resolveToolCall(
  options: ToolMappingOptions,
  task: MappingTask,
  tool: FunctionTool,
  args: Record<string, unknown>,
): Promise<ToolResolution> {
  const { pool } = options;
  const name = tool.function.name;
  const key = argsKey(args);
  const found = await findEntry(pool, task.taskId, name, key);
  if (found) {
    toolMapping.inc({ result: 'hit' });
    return { entry: found, exactHit: true };
  }
  const flightKey = [poolId(pool), task.taskId, name, key].join('\n');
  const { value } = await flights.run(
    flightKey,
    async (signal) => {
      // Again inside the flight: a flight that just ended may have inserted it.
      const existing = await findEntry(pool, task.taskId, name, key);
      if (existing) return { entry: existing, exactHit: true };
      const entries = await recentEntries(
        pool,
        task.taskId,
        name,
        options.shownEntries ?? DEFAULT_SHOWN_ENTRIES,
      );
      const simulation = await simulateToolCall(
        { ...options, signal },
        { instruction: task.instruction, tool, args, entries },
      );
      const base = { taskId: task.taskId, tool: name, argsKey: key, args };
      const candidate: MappingEntry =
        simulation.kind === 'equivalent'
          ? {
              ...base,
              response: simulation.entry.response,
              source: 'equivalent',
              equivalentTo: simulation.entry.argsKey,
            }
          : { ...base, response: simulation.response, source: 'simulated', equivalentTo: null };
      const { entry } = await insertIfAbsent(pool, candidate);
      toolMapping.inc({ result: candidate.source });
      return { entry, exactHit: false };
    },
    options.signal,
  );
  return value;
}
