/**
 * One Prometheus endpoint per worker process: the Temporal SDK runtime's series (its exporter
 * listens on a loopback port of its own) and mockworld's (activities/telemetry/metrics.ts)
 * served together at MOCKWORLD_METRICS_ADDRESS, so a scrape target sees both.
 */
import http from 'node:http';
import net from 'node:net';
import { metricsRegistry } from '../../activities/telemetry/metrics.js';

/** A free loopback port for the SDK's own exporter (closed again before the SDK binds it). */
export async function freeLoopbackPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.listen(0, '127.0.0.1', resolve).once('error', reject));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Serves `/metrics` at `address` (host:port): the SDK's text from `sdkUrl` (a worker's), then
 * mockworld's; without `sdkUrl` (the gateway, the world service: no Temporal worker) mockworld's alone.
 */
export async function startMetricsServer(address: string, sdkUrl?: string): Promise<http.Server> {
  const [host, port] = [
    address.slice(0, address.lastIndexOf(':')),
    Number(address.slice(address.lastIndexOf(':') + 1)),
  ];
  const server = http.createServer((req, res) => {
    if ((req.url ?? '/').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('metrics are at /metrics\n');
      return;
    }
    void (async () => {
      // The SDK's part may be missing for a moment at start; mockworld's is always served.
      const sdk = sdkUrl
        ? await fetch(sdkUrl)
            .then((r) => (r.ok ? r.text() : ''))
            .catch(() => '')
        : '';
      const own = await metricsRegistry.metrics();
      res.writeHead(200, { 'Content-Type': metricsRegistry.contentType });
      res.end(sdk ? `${sdk.trimEnd()}\n${own}` : own);
    })().catch(() => res.writeHead(500).end());
  });
  await new Promise<void>((resolve, reject) => server.listen(port, host, resolve).once('error', reject));
  server.unref(); // never what keeps a worker process alive
  return server;
}
