import { serve } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { isLoopback, ViewerAccessError } from './access.js';
import { createViewerApp } from './app.js';
import { readOnlyPool } from './db.js';
import type { TemporalUi } from './runs-page.js';

/** Options of {@link startViewer}. */
export interface ViewerOptions {
  readonly databaseUrl: string;
  /** 0 = any free port. */
  readonly port: number;
  /** Default 127.0.0.1. Any other address needs `token`. */
  readonly host?: string;
  /** Required to serve on a non-loopback address; then every request must present it. */
  readonly token?: string;
  readonly ui: TemporalUi;
}

/** A running viewer. */
export interface Viewer {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Starts the viewer; it serves until `close()`. */
export async function startViewer(options: ViewerOptions): Promise<Viewer> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopback(host) && !options.token) throw new ViewerAccessError(host);
  const pool = readOnlyPool(options.databaseUrl);
  const app = createViewerApp({ pool, ui: options.ui, token: options.token });
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: options.port, hostname: host }, () => resolve(s));
    s.once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}`,
    port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Browsers keep connections open; the viewer serves nothing that must finish.
      if ('closeAllConnections' in server) server.closeAllConnections();
      await closed;
      await pool.end();
    },
  };
}
