/** Errors of the world service (services/world) outside a request: a request's own is an HttpError. */

/**
 * Thrown when the world service is asked to listen on an address other machines can reach without
 * an authorization value: anyone there could then run episodes and pay for their model calls.
 */
export class WorldServiceAccessError extends Error {
  override readonly name = 'WorldServiceAccessError';
  constructor(readonly host: string) {
    super(`the world service on ${host} needs an authorization value (MOCKWORLD_WORLD_AUTH)`);
  }
}
