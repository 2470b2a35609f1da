import { createHash, timingSafeEqual } from 'node:crypto';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';

/** Small JSON-over-HTTP pieces shared by mockworld's local servers (codec server, model gateway). */

/** An error answered with its HTTP status and message. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Checks an `Authorization` header against one expected value in constant time; none expected = open. */
export function authorizationCheck(expected: string | undefined): (header: string | undefined) => boolean {
  if (expected === undefined) return () => true;
  const want = digest(expected);
  return (header) => timingSafeEqual(digest(header ?? ''), want);
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** The request body; a body over `limit` bytes is an {@link HttpError} 413 and is not buffered. */
export function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        // Stop reading; the answer closes the connection, so the rest is never buffered.
        req.removeAllListeners('data');
        req.pause();
        reject(new HttpError(413, `request body larger than ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export function sendJson(res: http.ServerResponse, status: number, value: unknown, close = false): void {
  const text = JSON.stringify(value);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...(close ? { connection: 'close' } : {}),
  });
  res.end(text);
}

/** Listens on `port` (0 = any free one) and returns the base URL and a close that drops open connections. */
export async function listen(
  server: http.Server,
  port: number,
  host: string,
): Promise<{ url: string; port: number; close(): Promise<void> }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shown = address.address.includes(':') ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
