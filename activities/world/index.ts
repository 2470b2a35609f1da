/**
 * The mock world (seed §3.2): an episode runner that lets an agent work a synthesized task against
 * LLM-simulated tools, kept consistent by the task's finite mapping, and an LLM-simulated user
 * who knows the hidden context. Used for teacher demonstrations and for GRPO rollouts. An
 * episode's input contract is schemas/episode-input.ts.
 */
export {
  createEpisodeRunner,
  runEpisode,
  type EpisodeRunner,
  type EpisodeRunnerDependencies,
  type EpisodeRunnerOptions,
} from './episode-runner.js';
export {
  boundedTurn,
  playEpisode,
  progressOf,
  type EpisodeEnvironment,
  type EpisodeHooks,
  type TurnAnswers,
} from './episode-loop.js';
export { agentSystemPrompt } from './agent-prompt.js';
export type { EpisodeProgress, EpisodeSummary } from './episode-summary.js';
export { ASK_USER_TOOL, ASK_USER_TOOL_NAME } from './ask-user.js';
export { argsKey, canonicalArgs } from './canonical-args.js';
export {
  EpisodeCheckpointConflictError,
  EpisodeMismatchError,
  TaskNotFoundError,
  TaskNotReadyError,
} from './errors.js';
export {
  findEntry,
  insertIfAbsent,
  recentEntries,
  type MappingEntry,
  type MappingSource,
} from './mapping-store.js';
export { TOOL_SIMULATOR_ROLE, USER_SIMULATOR_ROLE } from './model-roles.js';
export {
  DEFAULT_SHOWN_ENTRIES,
  resolveToolCall,
  type ToolMappingOptions,
  type ToolResolution,
} from './tool-mapping.js';
export {
  validateToolCall,
  type RawToolCall,
  type ToolCallCheck,
  type ToolCallProblem,
} from './tool-validation.js';
export { answerUser, STOP_MARKER, type UserReply } from './user-simulator.js';
export { userDialogue, type UserExchange } from './transcript.js';
