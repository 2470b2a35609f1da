/**
 * Times every request of an HTTP service into mockworld's registry
 * (activities/telemetry/metrics.ts), served with the rest of its series at MOCKWORLD_METRICS_ADDRESS.
 */
import type http from 'node:http';
import { requestOutcome, serviceRequestSeconds } from '../../activities/telemetry/metrics.js';
import { listen } from './json-http.js';
import { startMetricsServer } from './metrics-server.js';

/**
 * Observes each request of `server` when its response closes. `routeOf` names the route with a
 * small, fixed set of labels (ids and tool names left out), so a caller cannot grow the series.
 */
export function timeRequests(
  server: http.Server,
  service: string,
  routeOf: (method: string, path: string) => string,
): void {
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const started = process.hrtime.bigint();
    const route = routeOf(req.method ?? 'GET', (req.url ?? '/').split('?')[0]!);
    res.once('close', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      serviceRequestSeconds.observe(
        { service, route, outcome: requestOutcome(res.statusCode, res.writableFinished) },
        seconds,
      );
    });
  });
}

/** With an address (MOCKWORLD_METRICS_ADDRESS), serves the process's mockworld series there; returns its close. */
export async function serveMetrics(address: string | undefined): Promise<() => Promise<void>> {
  if (!address) return async () => {};
  const server = await startMetricsServer(address);
  return () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
}

/**
 * Times `server`'s requests as `service` (routes by `routeOf`), serves the process's series at
 * `metricsAddress` when one is set, and listens on `host:port`; its `close` stops both.
 */
export async function listenMeasured(
  server: http.Server,
  measure: { service: string; routeOf: (method: string, path: string) => string; metricsAddress?: string },
  port: number,
  host: string,
): Promise<{ url: string; port: number; close(): Promise<void> }> {
  timeRequests(server, measure.service, measure.routeOf);
  const closeMetrics = await serveMetrics(measure.metricsAddress);
  const serving = await listen(server, port, host).catch(async (error: unknown) => {
    await closeMetrics();
    throw error;
  });
  return {
    ...serving,
    async close() {
      await serving.close();
      await closeMetrics();
    },
  };
}
