import { loadEnvironment } from '../schemas/environment';
import { withLivenessHeartbeats } from './heartbeat';
import { createModelClient } from './llm';
import { createRewardActivities } from './reward';
import { createRunActivities } from './runs';
import { createSmokeActivities } from './smoke';
import { createStudyActivities } from './study';
import { createSynthesisActivities } from './synthesis';
import { createTrainingActivities } from './training';

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
    ...createRewardActivities(deps.databaseUrl, models),
    ...createTrainingActivities(deps.databaseUrl, models),
    ...createStudyActivities(deps.databaseUrl, models),
  });
}

/** Every activity by name, for type-only imports in workflows. */
export type MockworldActivities = ReturnType<typeof createActivities>;
