/**
 * Model-layer overhead: calls/s, added latency and CPU per call of `createModelClient().chat`
 * (cache lookup, limiter, HTTP, ledger insert) against raw HTTP requests (the same client, undici)
 * to the same OpenAI-compatible test server, at 0 ms and 50 ms upstream latency and 1..256 concurrent callers. Every layer call
 * is a distinct request, i.e. a cache miss with a cache write.
 *
 * Run: `npx tsx bench/model-layer.ts`. Prints a Markdown table, writes bench/results/model-layer.json.
 * The model server runs in a child process so its CPU does not compete with the layer's.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { createModelClient } from '../activities/llm/index.js';
import { meters } from './measure/meters.js';
import { writeResults } from './measure/results.js';
import { ModelEndpointSchema, SamplingSchema } from '../schemas/model-endpoint.js';
import { createTestDatabase } from '../testkit/database.js';
import { startModelServer } from '../testkit/model-server.js';

const numbers = (value: string | undefined, fallback: number[]) =>
  value ? value.split(',').map(Number) : fallback;
/** `BENCH_LATENCIES=50 BENCH_CALLERS=256` runs one cell (for profiling). */
const LATENCIES_MS = numbers(process.env.BENCH_LATENCIES, [0, 50]);
const CONCURRENCY = numbers(process.env.BENCH_CALLERS, [1, 16, 64, 256]);
/** Measured seconds per cell and path; 2 latencies x 4 concurrencies x 2 paths x 3 s = 48 s. */
const CELL_SECONDS = 3;
const WARMUP_SECONDS = 0.5;

interface PathResult {
  readonly calls: number;
  readonly callsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** CPU per call, ms: this process, the model server child, the database's PostgreSQL backends. */
  readonly cpuMsPerCall: { readonly bench: number; readonly modelServer: number; readonly postgres: number };
  readonly loadAvg: { readonly start: number; readonly end: number };
}

interface Cell {
  readonly upstreamLatencyMs: number;
  readonly concurrency: number;
  readonly raw: PathResult;
  readonly layer: PathResult;
  readonly addedP50Ms: number;
  readonly addedP99Ms: number;
}

/** Child mode: serve the test model server and print its URL. */
async function serve(latencyMs: number): Promise<void> {
  const server = await startModelServer({ latencyMs, log: false });
  console.log(server.url);
  process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
}

async function startServerProcess(latencyMs: number) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(import.meta.url), '--serve', String(latencyMs)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const lines = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`model server exited with ${code}`)));
  });
  return { url, pid: child.pid!, stop: () => child.kill('SIGTERM') };
}

/** Runs `concurrency` loops of `once` for `seconds`; returns per-call latencies and wall time. */
async function drive(concurrency: number, seconds: number, once: (i: number) => Promise<void>) {
  const latencies: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        await once(next++);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  return { latencies, wallMs: performance.now() - started };
}

/** One measured cell of one path: throughput, latency and the CPU of every process per call. */
async function measure(
  databaseUrl: string,
  modelServerPid: number,
  concurrency: number,
  once: (i: number) => Promise<void>,
): Promise<PathResult> {
  const read = await meters(databaseUrl, { modelServer: modelServerPid });
  const { latencies, wallMs } = await drive(concurrency, CELL_SECONDS, once);
  const { cpu, loadAvg } = await read();
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  const perCall = (ms: number) => ms / sorted.length;
  return {
    calls: sorted.length,
    callsPerSecond: sorted.length / (wallMs / 1000),
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    cpuMsPerCall: {
      bench: perCall(cpu.bench),
      modelServer: perCall(cpu.modelServer),
      postgres: perCall(cpu.postgres),
    },
    loadAvg,
  };
}

async function main(): Promise<void> {
  const rawConnections = new Agent({ keepAliveTimeout: 30_000, connections: null });
  const db = await createTestDatabase('mw_bench');
  const models = createModelClient({ databaseUrl: db.url });
  const sampling = SamplingSchema.parse({ temperature: 0, maxTokens: 16 });
  const nonce = randomBytes(4).toString('hex');
  const cells: Cell[] = [];
  try {
    for (const latency of LATENCIES_MS) {
      const server = await startServerProcess(latency);
      const endpoint = ModelEndpointSchema.parse({
        baseUrl: server.url,
        model: `bench-${latency}`,
        maxConcurrency: 4096,
      });
      const messages = (tag: string, i: number) => [
        { role: 'system' as const, content: 'You are a benchmark.\nrole: bench' },
        { role: 'user' as const, content: `request ${nonce} ${tag} ${i}` },
      ];
      // The plain path: the HTTP client the layer uses (undici's request on keep-alive
      // connections), the same body, nothing else. Node's fetch costs about 2 ms of CPU per call
      // more here, so a fetch loop would flatter the layer.
      const raw = (tag: string) => async (i: number) => {
        const response = await request(`${server.url}/chat/completions`, {
          method: 'POST',
          dispatcher: rawConnections,
          headers: { 'content-type': 'application/json', authorization: 'Bearer unused' },
          body: JSON.stringify({
            model: endpoint.model,
            messages: messages(tag, i),
            max_tokens: 16,
            temperature: 0,
          }),
        });
        await response.body.json();
      };
      const layer = (tag: string) => async (i: number) => {
        await models.chat({
          endpoint,
          messages: messages(tag, i),
          sampling,
          runId: `bench-${nonce}`,
          role: 'bench',
        });
      };
      try {
        await drive(16, WARMUP_SECONDS, raw('warm'));
        await drive(16, WARMUP_SECONDS, layer('warm'));
        for (const concurrency of CONCURRENCY) {
          const tag = `c${concurrency}`;
          const rawResult = await measure(db.url, server.pid, concurrency, raw(tag));
          const layerResult = await measure(db.url, server.pid, concurrency, layer(tag));
          cells.push({
            upstreamLatencyMs: latency,
            concurrency,
            raw: rawResult,
            layer: layerResult,
            addedP50Ms: layerResult.p50Ms - rawResult.p50Ms,
            addedP99Ms: layerResult.p99Ms - rawResult.p99Ms,
          });
          console.error(`latency ${latency} ms, ${concurrency} callers: done`);
        }
      } finally {
        server.stop();
      }
    }
  } finally {
    await db.drop();
  }

  const f = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
  const cpu = (r: PathResult) => {
    const { bench, modelServer, postgres } = r.cpuMsPerCall;
    return `${bench.toFixed(2)} + ${modelServer.toFixed(2)} + ${postgres.toFixed(2)} = ${(bench + modelServer + postgres).toFixed(2)}`;
  };
  const load = (r: PathResult) => `${r.loadAvg.start.toFixed(1)}→${r.loadAvg.end.toFixed(1)}`;
  const table = [
    '| upstream latency | callers | raw calls/s | layer calls/s | layer/raw | raw p50 / p99 ms | layer p50 / p99 ms | added p50 / p99 ms | CPU ms/call raw: bench + model server + PostgreSQL | CPU ms/call layer | load avg (raw; layer) |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...cells.map(
      (c) =>
        `| ${c.upstreamLatencyMs} ms | ${c.concurrency} | ${f(c.raw.callsPerSecond)} | ${f(c.layer.callsPerSecond)} | ` +
        `${(c.layer.callsPerSecond / c.raw.callsPerSecond).toFixed(2)} | ${f(c.raw.p50Ms)} / ${f(c.raw.p99Ms)} | ` +
        `${f(c.layer.p50Ms)} / ${f(c.layer.p99Ms)} | ${f(c.addedP50Ms)} / ${f(c.addedP99Ms)} | ` +
        `${cpu(c.raw)} | ${cpu(c.layer)} | ${load(c.raw)}; ${load(c.layer)} |`,
    ),
  ].join('\n');
  console.log(table);

  await writeResults('model-layer', {
    cellSeconds: CELL_SECONDS,
    notes:
      'layer = createModelClient().chat, every call a distinct request (cache miss + PostgreSQL write); raw = undici request, same body',
    cells,
  });
}

const serveAt = process.argv.indexOf('--serve');
if (serveAt >= 0) await serve(Number(process.argv[serveAt + 1] ?? 0));
else await main();
