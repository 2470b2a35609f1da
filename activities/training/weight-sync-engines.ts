/**
 * How each serving engine is told to serve a step, and how it says what it serves: one driver per
 * (engine, sync mode), over one replica's admin HTTP API. The routes are the engines' own:
 *
 * | engine, sync      | push                                                         | what it serves                 |
 * |-------------------|--------------------------------------------------------------|--------------------------------|
 * | mockworld, any    | nothing: the policy server reloads the run's newest step     | `policy_version` in /v1/models |
 * | vllm, lora        | POST /v1/load_lora_adapter {lora_name, lora_path}            | lora_name listed in /v1/models |
 * | sglang, lora      | POST /load_lora_adapter {lora_name, lora_path}               | lora_name listed in /v1/models |
 * | sglang, full      | POST /update_weights_from_disk {model_path, weight_version}  | weight_version of /model_info  |
 * | vllm, full        | POST /sleep?level=2, /wake_up?tags=weights,                  | awake (/is_sleeping false)     |
 * |                   | /collective_rpc reload_weights {weights_path}, /wake_up?tags=kv_cache |                       |
 *
 * vLLM exposes no weight version, so a full vLLM sync always reloads and can only check that the
 * reload answered and the engine woke up (docs/grpo.md: prefer lora with vLLM, or SGLang for full).
 */
import type { SyncPolicyInput } from '../../schemas/policy-serving.js';
import { adapterName, weightVersion } from '../../schemas/policy-serving.js';
import {
  ReplicaUnavailableError,
  WeightSyncInputError,
  WeightSyncRejectedError,
} from './weight-sync-errors.js';

/** One replica's admin API: JSON over HTTP, tried `attempts` times on what a retry can fix. */
export class AdminClient {
  /** Calls that failed and were tried again. */
  retries = 0;
  /** The engine's root URL: the OpenAI base URL without its `/v1`. */
  readonly root: string;

  constructor(
    readonly url: string,
    private readonly options: {
      readonly attempts: number;
      readonly timeoutMs: number;
      readonly apiKey?: string;
      readonly sleep: (ms: number) => Promise<void>;
    },
  ) {
    this.root = url.replace(/\/+$/, '').replace(/\/v1$/, '');
  }

  get(route: string): Promise<unknown> {
    return this.call('GET', route);
  }

  post(route: string, body?: unknown): Promise<unknown> {
    return this.call('POST', route, body);
  }

  private async call(method: string, route: string, body?: unknown): Promise<unknown> {
    let detail = '';
    for (let attempt = 1; attempt <= this.options.attempts; attempt++) {
      if (attempt > 1) {
        this.retries += 1;
        await this.options.sleep(Math.min(250 * 2 ** (attempt - 2), 5_000));
      }
      let response: Response;
      try {
        response = await fetch(`${this.root}${route}`, {
          method,
          headers: {
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(this.options.timeoutMs),
        });
      } catch (error) {
        detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        continue;
      }
      const text = await response.text().catch(() => '');
      if (response.ok) return parse(text);
      detail = `HTTP ${response.status}: ${text.slice(0, 300)}`;
      // 408 and 429 are "later"; any other 4xx is the same answer next time.
      if (response.status < 500 && response.status !== 408 && response.status !== 429) {
        throw new WeightSyncRejectedError(
          this.url,
          `${method} ${route}`,
          response.status,
          text.slice(0, 300),
        );
      }
    }
    throw new ReplicaUnavailableError(this.url, `${method} ${route}`, detail);
  }
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text; // vLLM answers some admin routes with plain text
  }
}

/** What a driver does for one replica. */
export interface EngineDriver {
  /** The model name rollouts of this step request. */
  readonly servedModel: string;
  /** What the replica reports once it serves the step. */
  readonly expected: string;
  /** True when the engine cannot tell its version, so the step is pushed every time. */
  readonly alwaysPush: boolean;
  /** What the replica serves now, comparable to `expected`. */
  read(admin: AdminClient): Promise<string | undefined>;
  /** Tells the replica to serve the step. */
  push(admin: AdminClient): Promise<void>;
  /** Frees what earlier steps left loaded (old adapters); best effort. */
  cleanup(admin: AdminClient): Promise<void>;
}

async function listedModels(admin: AdminClient): Promise<string[]> {
  const listing = (await admin.get('/v1/models')) as { data?: Array<{ id?: unknown }> };
  return (listing.data ?? []).map((m) => String(m.id));
}

/** The driver of `input.serving` for step `input.step`. */
export function driverFor(input: SyncPolicyInput): EngineDriver {
  const { serving, step } = input;
  if (serving.engine === 'mockworld') return mockworldDriver(input);
  if (serving.sync === 'lora') return loraDriver(input, serving.engine === 'vllm' ? '/v1' : '');
  if (step > 0 && input.modelPath === null) {
    throw new WeightSyncInputError(step, 'has no weights directory to reload'); // the trainer always returns one
  }
  return serving.engine === 'sglang' ? sglangFullDriver(input) : vllmFullDriver(input);
}

/** The built-in policy server: it reloads the run's newest step itself; the sync checks its version. */
function mockworldDriver(input: SyncPolicyInput): EngineDriver {
  return {
    servedModel: input.baseModel,
    expected: weightVersion(input.step),
    alwaysPush: false,
    async read(admin) {
      const listing = (await admin.get('/v1/models')) as {
        data?: Array<{ id?: string; run_id?: string; policy_version?: number }>;
      };
      const entry = (listing.data ?? []).find((m) => m.run_id === input.runId || m.id === input.runId);
      return entry?.policy_version === undefined ? undefined : weightVersion(entry.policy_version);
    },
    async push() {},
    async cleanup() {},
  };
}

/** Adapters by name (vLLM under /v1, SGLang at the root); step 0 is the base model, always listed. */
function loraDriver(input: SyncPolicyInput, prefix: string): EngineDriver {
  const name = input.step === 0 ? input.baseModel : adapterName(input.runId, input.step);
  const ours = new RegExp(`^${escape(input.runId)}-step-\\d+$`);
  return {
    servedModel: name,
    expected: name,
    alwaysPush: false,
    async read(admin) {
      return (await listedModels(admin)).includes(name) ? name : undefined;
    },
    async push(admin) {
      if (input.step === 0) return; // the base model is served from start-up
      if (input.adapterPath === null)
        throw new WeightSyncInputError(input.step, 'has no LoRA adapter to load');
      await admin.post(`${prefix}/load_lora_adapter`, { lora_name: name, lora_path: input.adapterPath });
    },
    async cleanup(admin) {
      for (const old of (await listedModels(admin)).filter((id) => ours.test(id) && id !== name)) {
        // Best effort: an adapter a concurrent attempt already unloaded is a 404, not a failure.
        await admin.post(`${prefix}/unload_lora_adapter`, { lora_name: old }).catch(() => undefined);
      }
    },
  };
}

/** SGLang: reload from disk, tagged with the step's weight version, read back from /model_info. */
function sglangFullDriver(input: SyncPolicyInput): EngineDriver {
  const version = weightVersion(input.step);
  return {
    servedModel: input.baseModel,
    // Step 0 of a model the engine was started with has no path to push: any version is the base.
    expected: input.modelPath === null ? '*' : version,
    alwaysPush: false,
    async read(admin) {
      let info: { weight_version?: unknown };
      try {
        info = (await admin.get('/model_info')) as typeof info;
      } catch (error) {
        if (!(error instanceof WeightSyncRejectedError)) throw error;
        info = (await admin.get('/get_weight_version')) as typeof info; // SGLang before /model_info
      }
      if (input.modelPath === null) return '*';
      return typeof info.weight_version === 'string' ? info.weight_version : undefined;
    },
    async push(admin) {
      const answer = (await admin.post('/update_weights_from_disk', {
        model_path: input.modelPath,
        weight_version: version,
      })) as { success?: boolean; message?: string };
      if (answer.success === false) {
        throw new WeightSyncRejectedError(
          admin.url,
          'POST /update_weights_from_disk',
          200,
          String(answer.message),
        );
      }
    },
    async cleanup() {},
  };
}

/** vLLM: sleep, wake the weights, reload them from the step's directory, wake the KV cache. */
function vllmFullDriver(input: SyncPolicyInput): EngineDriver {
  return {
    servedModel: input.baseModel,
    expected: 'awake',
    alwaysPush: input.modelPath !== null,
    async read(admin) {
      const answer = (await admin.get('/is_sleeping')) as { is_sleeping?: boolean };
      return answer.is_sleeping === false ? 'awake' : 'asleep';
    },
    async push(admin) {
      if (input.modelPath === null) return;
      await admin.post('/sleep?level=2');
      await admin.post('/wake_up?tags=weights');
      await admin.post('/collective_rpc', {
        method: 'reload_weights',
        kwargs: { weights_path: input.modelPath },
      });
      await admin.post('/wake_up?tags=kv_cache');
    },
    async cleanup() {},
  };
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
