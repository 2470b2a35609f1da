/**
 * mockworld's own Prometheus series (prom-client), beside the Temporal SDK runtime's: model calls
 * paid and answered from the cache, tokens and cost by role, errors by kind, tool-mapping hits,
 * rollouts and rewards. Counting is always on and costs a map update; the series are served only
 * where MOCKWORLD_METRICS_ADDRESS is set (services/http/metrics-server.ts).
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

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
/**
 * Judge controls graded (issue 36) by kind of judge (`rubric`: GRPO and synthetic evaluation,
 * `study`: a study's correctness judge) and outcome (`passed`, `failed`): the pass rate is
 * rate(passed) / rate(all); a run's own rate is in its metrics and summary.
 */
export const judgeControlsGraded = counter(
  'mockworld_judge_controls_total',
  'Judge control items graded, by judge and outcome.',
  ['judge', 'outcome'],
);
/** Sandboxed runs of this worker by state (`running`, `queued`: waiting for one of its slots). */
export const sandboxRuns = new Gauge<'state'>({
  name: 'mockworld_sandbox_runs',
  help: 'Sandboxed Python runs of this worker, running and queued for a slot (MOCKWORLD_SANDBOX_CONCURRENCY).',
  labelNames: ['state'],
  registers: [metricsRegistry],
});
/** How long sandboxed runs waited for a slot. */
export const sandboxQueueWait = new Histogram({
  name: 'mockworld_sandbox_queue_wait_seconds',
  help: "Time a sandboxed Python run waited for one of the worker's slots, in seconds.",
  buckets: [0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [metricsRegistry],
});
/** Rubric rewards of judged rollouts. */
export const rolloutReward = new Histogram({
  name: 'mockworld_rollout_reward',
  help: 'Rubric reward of judged rollouts.',
  buckets: [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1],
  registers: [metricsRegistry],
});

/** The role label of a call: its role, or `none`. */
export const roleLabel = (role: string | undefined | null) => role || 'none';

/**
 * Requests to mockworld's HTTP services (the model gateway, the world service) by service, route
 * and outcome (`ok`, `client_error` for 4xx, `upstream_error` for 502, `error` for other 5xx,
 * `aborted` when the caller left first); the histogram's `_count` is the request count. Model calls
 * can take minutes, hence the long buckets.
 */
export const serviceRequestSeconds = new Histogram<'service' | 'route' | 'outcome'>({
  name: 'mockworld_service_request_duration_seconds',
  help: 'Requests to the model gateway and the world service by route and outcome, in seconds.',
  labelNames: ['service', 'route', 'outcome'],
  buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
  registers: [metricsRegistry],
});

/** The outcome label of a finished response (or of one whose caller left before it was sent). */
export function requestOutcome(status: number, finished: boolean): string {
  if (!finished) return 'aborted';
  if (status < 400) return 'ok';
  if (status < 500) return 'client_error';
  return status === 502 ? 'upstream_error' : 'error';
}
