/**
 * mockworld's own Prometheus series (prom-client), beside the Temporal SDK runtime's: model calls
 * paid and answered from the cache, tokens and cost by role, errors by kind, tool-mapping hits,
 * rollouts and rewards. Counting is always on and costs a map update; the series are served only
 * where MOCKWORLD_METRICS_ADDRESS is set (workers/metrics-server.ts).
 */
import { Counter, Histogram, Registry } from 'prom-client';

/** The registry of this process's mockworld series. */
export const metricsRegistry = new Registry();

const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
  new Counter<L>({ name, help, labelNames, registers: [metricsRegistry] });

/** Model calls by role and where the answer came from (paid upstream, or the ledger's cache). */
export const modelCalls = counter(
  'mockworld_model_calls_total',
  'Model calls by role and source (paid, cache).',
  ['role', 'source'],
);
/** Tokens of paid calls by role and kind (prompt, completion). */
export const modelTokens = counter(
  'mockworld_model_tokens_total',
  'Tokens of paid model calls by role and kind.',
  ['role', 'kind'],
);
/** USD of paid calls by role (priced endpoints only). */
export const modelCost = counter(
  'mockworld_model_cost_usd_total',
  'USD spent on priced model calls, by role.',
  ['role'],
);
/** Failed model calls by error kind (its class name). */
export const modelErrors = counter(
  'mockworld_model_errors_total',
  'Model calls that failed, by error kind.',
  ['role', 'kind'],
);
/** Tool calls answered by an exact mapping hit, a new simulation, or an equivalent entry. */
export const toolMapping = counter(
  'mockworld_tool_mapping_total',
  'Mock tool calls by how the mapping answered (hit, simulated, equivalent).',
  ['result'],
);
/** Judged rollouts (their count is the rate of rollouts per second). */
export const rolloutsJudged = counter('mockworld_rollouts_judged_total', 'Rollouts played and judged.', []);
/** Rubric rewards of judged rollouts. */
export const rolloutReward = new Histogram({
  name: 'mockworld_rollout_reward',
  help: 'Rubric reward of judged rollouts.',
  buckets: [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1],
  registers: [metricsRegistry],
});

/** The role label of a call: its role, or `none`. */
export const roleLabel = (role: string | undefined | null) => role || 'none';
