import { serve } from '@hono/node-server';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { serveMetrics, timeRequests } from '../http/request-metrics.js';
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
  /** Set (MOCKWORLD_METRICS_ADDRESS, host:port): serves the viewer's requests by route and outcome there. */
  readonly metricsAddress?: string;
}

/** The route of a viewer request: its page kind, never an id (a bounded set of labels). */
export function viewerRoute(_method: string, path: string): string {
  const page = /^\/(health|assets|runs|tasks|episodes)(\/|$)/.exec(path)?.[1];
  if (page === 'runs') return /^\/runs\/[^/]+\/iterations\//.test(path) ? 'iteration' : 'run';
  return page ?? (path === '/' ? 'runs-list' : 'other');
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
  timeRequests(server as http.Server, 'viewer', viewerRoute);
  const closeMetrics = await serveMetrics(options.metricsAddress);
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
      await closeMetrics();
      await pool.end();
    },
  };
}
