// The package's public surface: the worker plugin, the typed client, the spec schemas.
// Subpaths give each alone: mockworld/plugin, mockworld/client, mockworld/schemas, mockworld/workflows.
export { MockworldPlugin, MOCKWORLD_WORKFLOWS_PATH, type MockworldPluginOptions } from './workers/plugin.js';
export {
  createCpuWorker,
  runCpuWorker,
  CPU_WORKER_TUNING,
  type CpuWorkerOptions,
} from './workers/cpu-worker.js';
export {
  MockworldClient,
  MockworldRun,
  connectClient,
  type ConnectOptions,
  type RunOverview,
} from './client/index.js';
export {
  parseSpec,
  parseSpecOfKind,
  SPEC_KINDS,
  SPEC_SCHEMAS,
  type AnySpec,
  type SpecKind,
} from './schemas/specs.js';
export { SpecValidationError, type SpecIssue } from './schemas/spec-error.js';
export type { RunStatus } from './schemas/run-status.js';
