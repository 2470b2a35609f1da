/**
 * The admin API of a serving engine, played by the scripted model server (model-server.ts) when it
 * is started with `engine`: what the weight-sync activity talks to after each trainer step. Only
 * the routes and answers the activity relies on, as vLLM and SGLang document them:
 *
 * - vLLM (with `--enable-lora`, `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`, and for full reloads
 *   `--enable-sleep-mode` with `VLLM_SERVER_DEV_MODE=1`): `POST /v1/load_lora_adapter`,
 *   `POST /v1/unload_lora_adapter`, `POST /sleep?level=N`, `POST /wake_up?tags=weights|kv_cache`,
 *   `GET /is_sleeping`, `POST /collective_rpc {"method": "reload_weights", "kwargs": {"weights_path"}}`.
 * - SGLang: `POST /load_lora_adapter`, `POST /unload_lora_adapter`,
 *   `POST /update_weights_from_disk {"model_path", "weight_version"}`, `GET /model_info`,
 *   `GET /get_weight_version`.
 *
 * Both list the base model and the loaded adapters in `GET /v1/models` and answer a chat request
 * for a model they do not serve with 404, so a rollout that asks for a stale adapter fails.
 * Faults: an admin route answering an error status, and a replica that accepts loads without
 * applying them (stale), to test the activity's retries and its refusal of a stale replica.
 */

/** Which engine the double plays. */
export type EngineKind = 'vllm' | 'sglang';

/** A fault of the admin API. */
export type AdminFault =
  /** The next admin request (on `route`, when given) answers `status` (default 500). */
  { readonly kind: 'admin-error'; readonly status?: number; readonly route?: string };

/** One admin request as received. */
export interface AdminCall {
  /** Arrival time (ms since epoch). */
  readonly at: number;
  readonly method: string;
  /** The path with its query string, e.g. `/wake_up?tags=weights`. */
  readonly route: string;
  readonly body: unknown;
  /** The status answered. */
  readonly status: number;
}

/** The engine's state, as a test reads it. */
export interface EngineState {
  readonly kind: EngineKind;
  /** Loaded LoRA adapters: name -> path. */
  readonly adapters: Map<string, string>;
  /** vLLM sleep level (0 awake, 1 weights offloaded, 2 weights discarded); `kvCacheAsleep` apart. */
  sleepLevel: number;
  kvCacheAsleep: boolean;
  /** The weights last loaded (vLLM reload_weights, SGLang update_weights_from_disk); undefined: the start-up model. */
  weightsPath: string | undefined;
  /** SGLang's weight version ("default" at start-up). */
  weightVersion: string;
  /** When true, loads are answered 200 and not applied: the replica keeps serving its old version. */
  ignoreLoads: boolean;
  /** Admin requests in arrival order. */
  readonly calls: AdminCall[];
}

/** The engine double inside a model server. */
export interface EngineDouble {
  readonly state: EngineState;
  injectAdminFaults(...faults: AdminFault[]): void;
  /** Model ids served now: the base and every loaded adapter. */
  servedModels(): string[];
  /** Whether a chat request for `model` can be answered (served, and the engine awake). */
  canServe(model: string): { ok: true } | { ok: false; status: number; message: string };
  /** Answers an admin request, or returns undefined when `method route` is not an admin route. */
  handle(method: string, url: string, body: unknown): { status: number; body: unknown } | undefined;
}

/** Creates the admin API of `kind`, serving `baseModel` at start-up. */
export function createEngineDouble(kind: EngineKind, baseModel: string): EngineDouble {
  const state: EngineState = {
    kind,
    adapters: new Map(),
    sleepLevel: 0,
    kvCacheAsleep: false,
    weightsPath: undefined,
    weightVersion: 'default',
    ignoreLoads: false,
    calls: [],
  };
  const faults: AdminFault[] = [];
  const loraPrefix = kind === 'vllm' ? '/v1' : '';
  const routes = new Set([
    `POST ${loraPrefix}/load_lora_adapter`,
    `POST ${loraPrefix}/unload_lora_adapter`,
    ...(kind === 'vllm'
      ? ['POST /sleep', 'POST /wake_up', 'GET /is_sleeping', 'POST /collective_rpc']
      : ['POST /update_weights_from_disk', 'GET /model_info', 'GET /get_weight_version']),
  ]);

  const ok = (body: unknown = { success: true }) => ({ status: 200, body });
  const error = (status: number, message: string) => ({
    status,
    body: { error: { message, type: status === 404 ? 'NotFoundError' : 'BadRequestError', code: status } },
  });

  function route(method: string, path: string, query: URLSearchParams, body: Record<string, unknown>) {
    const key = `${method} ${path}`;
    if (key === `POST ${loraPrefix}/load_lora_adapter`) {
      const name = body['lora_name'];
      const path = body['lora_path'];
      if (typeof name !== 'string' || typeof path !== 'string') {
        return error(400, 'lora_name and lora_path are required');
      }
      if (state.adapters.has(name)) return error(400, `The lora adapter '${name}' has already been loaded.`);
      if (!state.ignoreLoads) state.adapters.set(name, path);
      return ok(`Success: LoRA adapter '${name}' added successfully.`);
    }
    if (key === `POST ${loraPrefix}/unload_lora_adapter`) {
      const name = body['lora_name'];
      if (typeof name !== 'string' || !state.adapters.has(name)) {
        return error(404, `The lora adapter '${String(name)}' cannot be found.`);
      }
      state.adapters.delete(name);
      return ok(`Success: LoRA adapter '${name}' removed successfully.`);
    }
    if (kind === 'vllm') {
      if (key === 'POST /sleep') {
        state.sleepLevel = Number(query.get('level') ?? '1');
        state.kvCacheAsleep = true;
        return ok({});
      }
      if (key === 'POST /wake_up') {
        if (state.ignoreLoads) return ok({});
        const tags = query.getAll('tags');
        if (tags.length === 0 || tags.includes('weights')) state.sleepLevel = 0;
        if (tags.length === 0 || tags.includes('kv_cache')) state.kvCacheAsleep = false;
        return ok({});
      }
      if (key === 'GET /is_sleeping') return ok({ is_sleeping: state.sleepLevel > 0 || state.kvCacheAsleep });
      if (key === 'POST /collective_rpc') {
        if (body['method'] !== 'reload_weights')
          return error(400, `unknown method ${String(body['method'])}`);
        if (state.sleepLevel > 0) return error(500, 'cannot reload weights while they are asleep');
        const kwargs = (body['kwargs'] ?? {}) as Record<string, unknown>;
        if (!state.ignoreLoads) state.weightsPath = String(kwargs['weights_path'] ?? state.weightsPath);
        return ok({ results: [null] });
      }
    } else {
      if (key === 'POST /update_weights_from_disk') {
        if (typeof body['model_path'] !== 'string') return error(400, 'model_path is required');
        if (!state.ignoreLoads) {
          state.weightsPath = body['model_path'];
          if (typeof body['weight_version'] === 'string') state.weightVersion = body['weight_version'];
        }
        return ok({ success: true, message: 'Succeeded to update model weights.', num_paused_requests: 0 });
      }
      if (key === 'GET /model_info') {
        return ok({ model_path: state.weightsPath ?? baseModel, weight_version: state.weightVersion });
      }
      if (key === 'GET /get_weight_version') return ok({ weight_version: state.weightVersion });
    }
    return undefined;
  }

  return {
    state,
    injectAdminFaults: (...more) => faults.push(...more),
    servedModels: () => [baseModel, ...state.adapters.keys()],
    canServe(model) {
      if (state.sleepLevel > 0 || state.kvCacheAsleep) {
        return { ok: false, status: 503, message: 'the engine is sleeping' };
      }
      if (model !== baseModel && !state.adapters.has(model)) {
        return { ok: false, status: 404, message: `The model \`${model}\` does not exist.` };
      }
      return { ok: true };
    },
    handle(method, url, rawBody) {
      const parsed = new URL(url, 'http://engine');
      const path = parsed.pathname.replace(/\/+$/, '');
      if (!routes.has(`${method} ${path}`)) return undefined;
      const body = (rawBody && typeof rawBody === 'object' ? rawBody : {}) as Record<string, unknown>;
      // A faulted call is answered before the route runs, so it changes nothing (as a 5xx would not).
      const at = faults.findIndex((f) => f.route === undefined || f.route === path);
      const fault = at >= 0 ? faults.splice(at, 1)[0] : undefined;
      const result = fault
        ? error(fault.status ?? 500, `injected admin error on ${path}`)
        : route(method, path, parsed.searchParams, body)!;
      state.calls.push({
        at: Date.now(),
        method,
        route: `${path}${parsed.search}`,
        body: rawBody,
        status: result.status,
      });
      return result;
    },
  };
}
