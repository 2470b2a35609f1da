import { loadEnvironment } from '../schemas/environment.js';
import { withLivenessHeartbeats } from './heartbeat.js';
import { createCorrectnessActivities } from './correctness/index.js';
import { createEvaluationActivities } from './evaluation/index.js';
import { createModelClient } from './llm/index.js';
import { createJudgeAuditActivities } from './reward/judge-audit.js';
import { createRunActivities } from './runs.js';
import { createSandboxActivities } from './sandbox/index.js';
import { createSearchActivities } from './search/index.js';
import { createSmokeActivities } from './smoke.js';
import { createStudyActivities } from './study/index.js';
import { createSynthesisActivities } from './synthesis/index.js';
import { createTrainingActivities } from './training/index.js';

/** What the activities need from the worker process. */
export interface ActivityDependencies {
  /** PostgreSQL holding runs, caches and datasets. */
  readonly databaseUrl: string;
}

/** Builds every mockworld activity, bound to one database; the plugin registers the result. */
export function createActivities(
  deps: ActivityDependencies = { databaseUrl: loadEnvironment().DATABASE_URL },
) {
  const models = createModelClient({ databaseUrl: deps.databaseUrl });
  return withLivenessHeartbeats({
    ...createRunActivities(deps.databaseUrl),
    ...createSmokeActivities(models),
    ...createSynthesisActivities(deps.databaseUrl, models),
    ...createTrainingActivities(deps.databaseUrl, models, loadEnvironment().MOCKWORLD_SANDBOX_VENV),
    ...createStudyActivities(deps.databaseUrl, models),
    ...createJudgeAuditActivities(deps.databaseUrl, models),
    ...createSandboxActivities(loadEnvironment().MOCKWORLD_SANDBOX_VENV),
    ...createSearchActivities(deps.databaseUrl),
    ...createCorrectnessActivities(deps.databaseUrl, models, loadEnvironment().MOCKWORLD_SANDBOX_VENV),
    ...createEvaluationActivities(deps.databaseUrl, models, loadEnvironment().MOCKWORLD_SANDBOX_VENV),
  });
}

/** Every activity by name, for type-only imports in workflows. */
export type MockworldActivities = ReturnType<typeof createActivities>;
