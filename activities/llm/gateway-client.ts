import http from 'node:http';
import https from 'node:https';
import { ModelGatewayError, ModelRequestRejectedError, ModelRetriesExhaustedError } from './errors.js';
import type { CallCompleter } from './model-client.js';
import type { ChatResult } from './types.js';

/** Path of the gateway's one operation; the body is {@link GatewayRequest}. */
export const GATEWAY_COMPLETE_PATH = '/v1/mockworld/complete';

/** What a worker sends the gateway: the call without its abort signal, and the response format. */
export interface GatewayRequest {
  readonly call: Record<string, unknown>;
  readonly responseFormat?: unknown;
}

/** How the gateway reports a failed call; `name` is the model layer's error class. */
export interface GatewayError {
  readonly name: string;
  readonly message: string;
  readonly endpoint?: string;
  readonly model?: string;
  readonly status?: number;
  readonly detail?: string;
  readonly attempts?: number;
  readonly lastStatus?: number;
  readonly lastReason?: string;
}

const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

/**
 * Completes calls through a model gateway. The gateway (not this process) sends the call upstream
 * and stores the answer, so an answer paid for while this process is killed is still recorded and
 * the retried activity reads it instead of paying again. Aborting a call here only stops waiting.
 */
export function gatewayCompleter(baseUrl: string, authorization?: string): CallCompleter {
  const url = new URL(GATEWAY_COMPLETE_PATH, baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
  const transport = url.protocol === 'https:' ? https : http;
  const agent = url.protocol === 'https:' ? agents.https : agents.http;
  return (call, responseFormat) => {
    const { signal, ...wire } = call;
    const body = JSON.stringify({ call: wire, responseFormat } satisfies GatewayRequest);
    return new Promise<ChatResult>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      send(true);
      function send(mayResend: boolean): void {
        const request = transport.request(
          url,
          {
            method: 'POST',
            agent,
            headers: {
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(body),
              ...(authorization ? { authorization } : {}),
            },
          },
          (response) => {
            const chunks: Buffer[] = [];
            response.on('data', (chunk: Buffer) => chunks.push(chunk));
            response.on('error', reject);
            response.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              let parsed: unknown;
              try {
                parsed = JSON.parse(text);
              } catch {
                return reject(
                  new ModelGatewayError(url.origin, `answered ${response.statusCode}: ${text.slice(0, 300)}`),
                );
              }
              if (response.statusCode === 200) resolve(parsed as ChatResult);
              else
                reject(toError((parsed as { error?: GatewayError }).error, url.origin, response.statusCode));
            });
          },
        );
        const onAbort = () => {
          request.destroy();
          reject(signal!.reason);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        request.on('close', () => signal?.removeEventListener('abort', onAbort));
        request.on('error', (error: NodeJS.ErrnoException) => {
          if (signal?.aborted) return;
          // A kept-alive socket the gateway closed as idle just as this request was written: the
          // gateway never read it, so it is sent once more on a fresh connection (Node's documented
          // `reusedSocket` case). Any other reset is reported.
          if (mayResend && request.reusedSocket && error.code === 'ECONNRESET') return send(false);
          reject(
            new ModelGatewayError(
              url.origin,
              `unreachable (${error.code ?? error.message}); ` +
                'start it with `mockworld gateway` or unset MOCKWORLD_MODEL_GATEWAY_URL',
            ),
          );
        });
        request.end(body);
      }
    });
  };
}

/** The model layer's error as the gateway reported it, so retry policies see the same types. */
function toError(error: GatewayError | undefined, origin: string, status: number | undefined): Error {
  if (error?.name === ModelRequestRejectedError.type) {
    return new ModelRequestRejectedError(
      error.endpoint ?? '',
      error.model ?? '',
      error.status ?? 0,
      error.detail ?? '',
    );
  }
  if (error?.name === ModelRetriesExhaustedError.type) {
    return new ModelRetriesExhaustedError(
      error.endpoint ?? '',
      error.model ?? '',
      error.attempts ?? 0,
      error.lastStatus,
      error.lastReason ?? '',
    );
  }
  return new ModelGatewayError(origin, `failed the call (${status}): ${error?.message ?? 'no detail'}`);
}
