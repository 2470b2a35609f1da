import { embeddedModelUrl, loadEnvironment } from '../../schemas/environment.js';
import { ModelEndpointSchema, type ModelEndpoint } from '../../schemas/model-endpoint.js';

/** Model name the embedded server reports. */
export const EMBEDDED_MODEL_NAME = 'smollm2-135m-instruct';

/** How reports name the embedded model wherever it played a role. */
export const EMBEDDED_TOY = 'embedded SmolLM2-135M (toy)';

/** What a run's report and page open with when the embedded toy model answered any of its roles. */
export function embeddedToyLabel(roles: readonly string[]): string {
  return (
    `Toy figures: the ${EMBEDDED_TOY} answered as ${roles.join(', ')}; what it wrote and ` +
    'any score it decided are not meaningful (MOCKWORLD_MODEL_URL points the workers at a real model).'
  );
}

/**
 * The endpoint of a role that names none: `MOCKWORLD_MODEL_URL` (+ `MOCKWORLD_MODEL_NAME`,
 * `MOCKWORLD_MODEL_KEY_ENV`) when set on the worker, else the embedded model. Resolved on the
 * worker, so one spec runs unchanged on a laptop and on a cluster.
 */
export function resolveEndpoint(endpoint: ModelEndpoint | undefined): ModelEndpoint {
  if (endpoint) return endpoint;
  const env = loadEnvironment();
  return ModelEndpointSchema.parse({
    baseUrl: env.MOCKWORLD_MODEL_URL ?? embeddedModelUrl(env),
    model: env.MOCKWORLD_MODEL_NAME ?? EMBEDDED_MODEL_NAME,
    apiKeyEnv: env.MOCKWORLD_MODEL_KEY_ENV,
    // The embedded model answers one request at a time on a laptop's cores.
    maxConcurrency: env.MOCKWORLD_MODEL_URL ? 32 : 2,
  });
}
