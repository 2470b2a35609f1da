/** OpenAI error `type` values this server answers with. */
export type ApiErrorType = 'invalid_request_error' | 'not_found_error' | 'server_error';

/**
 * An error answered to the client as an OpenAI-style JSON body `{ error: { message, type, param,
 * code } }` with `status` as the HTTP status. Thrown by request validation (400), routing (404, 405)
 * and generation (500).
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    message: string,
    readonly type: ApiErrorType = status >= 500 ? 'server_error' : 'invalid_request_error',
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
  }

  /** The JSON body sent to the client. */
  toJSON(): { error: { message: string; type: ApiErrorType; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/**
 * The server cannot start: its port is taken or cannot be bound, or a command-line option is not
 * what it must be. Said once at start, never answered to a client.
 */
export class ServerStartError extends Error {
  override readonly name = 'ServerStartError';
}

/** A 400 `invalid_request_error` naming the offending parameter. */
export function badRequest(
  message: string,
  param: string | null = null,
  code: string | null = null,
): ApiError {
  return new ApiError(400, message, 'invalid_request_error', param, code);
}
