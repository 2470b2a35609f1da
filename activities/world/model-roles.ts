import type { ModelRole } from '../../schemas/model-endpoint.js';
import { resolveEndpoint } from '../llm/default-endpoint.js';
import type { ModelCall } from '../llm/index.js';

/** Ledger role of the tool simulator's calls. */
export const TOOL_SIMULATOR_ROLE = 'tool-simulator';
/** Ledger role of the user simulator's calls. */
export const USER_SIMULATOR_ROLE = 'user-simulator';

/** Who pays for a call and how it may be cancelled; shared by the agent and both simulators. */
export interface CallContext {
  /** Workflow id of the run, for the usage ledger. */
  readonly runId?: string;
  readonly signal?: AbortSignal;
}

/**
 * The parts of a {@link ModelCall} fixed by a model role: the endpoint (the worker's default when
 * the role names none) and sampling, with the ledger role name and the run that pays.
 */
export function callSettings(
  role: ModelRole,
  roleName: string,
  context: CallContext,
): Pick<ModelCall, 'endpoint' | 'sampling' | 'role' | 'runId' | 'signal'> {
  return {
    endpoint: resolveEndpoint(role.endpoint),
    sampling: role.sampling,
    role: roleName,
    runId: context.runId,
    signal: context.signal,
  };
}
