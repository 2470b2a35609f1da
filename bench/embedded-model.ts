/**
 * Generation speed of the embedded model: tokens/s through the OpenAI-compatible server (openai
 * client, HTTP, grammar-free chat) against raw node-llama-cpp (`LlamaChatSession.prompt`) on the
 * same model file, prompt, thread count, greedy sampling and `max_tokens`; plus the server with 2
 * and 4 concurrent requests (spread over the server's chat contexts, one decoding thread each; the
 * requests of one context share its batches). The raw path resolves the model's chat wrapper once
 * and reuses it, as the server does (node-llama-cpp's default resolves it in every
 * `LlamaChatSession`, 0.8–1.6 s of CPU each here), so the ratio is the server's own overhead. Each
 * row is the median of REPEATS runs; within a repeat the four paths run one after the other, the
 * order rotating, so that load from other processes falls on all alike. Time includes prompt
 * evaluation (the prompt is short) and, for the server, HTTP. CPU is this process's (it hosts the
 * server, the client and the raw path), per token.
 *
 * Run: `npx tsx bench/embedded-model.ts [--threads N] [--sequences N]`. Prints Markdown tables,
 * writes bench/results/embedded-model.json.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { getLlama, LlamaChatSession, LlamaLogLevel, resolveChatWrapper } from 'node-llama-cpp';
import OpenAI from 'openai';
import { ensureEmbeddedModel } from '../deploy/embedded-model/fetch-model.js';
import {
  DEFAULT_SEQUENCES,
  defaultContexts,
  defaultThreads,
  startEmbeddedModelServer,
} from '../services/embedded-model/index.js';
import { writeResults } from './measure/results.js';

const SYSTEM = 'You are a helpful assistant.';
const PROMPT = 'Write a long story about a dragon who learns to bake bread.';
const MAX_TOKENS = 128;
const REPEATS = 5;

interface Row {
  readonly path: string;
  readonly concurrency: number;
  readonly tokens: number;
  readonly seconds: number;
  /** Text of the (first) completion, to check that both paths generate the same greedy answer. */
  readonly text: string;
  /** CPU of this process during the run, ms. */
  readonly cpuMs: number;
  /** 1-minute load average when the run started and ended. */
  readonly load: readonly [number, number];
  /** tokens/s of every measured run, in order. */
  readonly runs?: readonly number[];
}

/** Times `body`, with this process's CPU and the machine's load around it. */
async function timed(
  body: () => Promise<{ tokens: number; text: string }>,
): Promise<Omit<Row, 'path' | 'concurrency'>> {
  const load0 = os.loadavg()[0]!;
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  const { tokens, text } = await body();
  const seconds = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { tokens, text, seconds, cpuMs: (cpu.user + cpu.system) / 1000, load: [load0, os.loadavg()[0]!] };
}

/** Raw node-llama-cpp: a LlamaChatSession on its own context of the same model file. */
async function openRaw(modelPath: string, threads: number) {
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath });
  const context = await model.createContext({ sequences: 1, contextSize: 8192, threads });
  const sequence = context.getSequence();
  const chatWrapper = resolveChatWrapper(model);
  return {
    async run(): Promise<Row> {
      const measured = await timed(async () => {
        const session = new LlamaChatSession({
          contextSequence: sequence,
          chatWrapper,
          autoDisposeSequence: false,
          systemPrompt: SYSTEM,
        });
        let tokens = 0;
        const text = await session.prompt(PROMPT, {
          maxTokens: MAX_TOKENS,
          temperature: 0,
          repeatPenalty: false,
          onToken: (t) => (tokens += t.length),
        });
        session.dispose({ disposeSequence: false });
        return { tokens, text };
      });
      return { path: 'raw node-llama-cpp (LlamaChatSession)', concurrency: 1, ...measured };
    },
    async close() {
      await context.dispose();
      await model.dispose();
    },
  };
}

/** The embedded model server, called through the openai client with `concurrency` requests at once. */
async function runServer(client: OpenAI, model: string, concurrency: number): Promise<Row> {
  const measured = await timed(async () => {
    const completions = await Promise.all(
      Array.from({ length: concurrency }, () =>
        client.chat.completions.create({
          model,
          messages: [
            { role: 'system', content: SYSTEM },
            { role: 'user', content: PROMPT },
          ],
          max_tokens: MAX_TOKENS,
          temperature: 0,
        }),
      ),
    );
    const tokens = completions.reduce((sum, c) => sum + (c.usage?.completion_tokens ?? 0), 0);
    return { tokens, text: completions[0]?.choices[0]?.message.content ?? '' };
  });
  return { path: 'embedded model server (openai client)', concurrency, ...measured };
}

/**
 * One warm-up of each path, then REPEATS rounds of raw, server ×1, ×2 and ×4, the order rotating
 * each round, so that load from other processes on the machine falls on all paths alike.
 */
async function measure(modelPath: string, threads: number, sequences: number): Promise<Row[]> {
  const server = await startEmbeddedModelServer({ port: 0, modelPath, threads, sequences });
  const rawModel = await openRaw(modelPath, threads);
  const client = new OpenAI({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
  const paths: (() => Promise<Row>)[] = [
    () => rawModel.run(),
    () => runServer(client, server.model, 1),
    () => runServer(client, server.model, 2),
    () => runServer(client, server.model, 4),
  ];
  try {
    const runs: Row[][] = paths.map(() => []);
    for (let i = 0; i <= REPEATS; i++) {
      for (let k = 0; k < paths.length; k++) {
        const which = (i + k) % paths.length;
        const row = await paths[which]!();
        if (i > 0) runs[which]!.push(row);
      }
    }
    return runs.map(median);
  } finally {
    await server.close();
    await rawModel.close();
  }
}

function median(runs: Row[]): Row {
  const sorted = [...runs].sort((a, b) => a.tokens / a.seconds - b.tokens / b.seconds);
  return { ...sorted[Math.floor(sorted.length / 2)]!, runs: runs.map((r) => r.tokens / r.seconds) };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { threads: { type: 'string' }, sequences: { type: 'string' } } });
  const threads = values.threads ? Number(values.threads) : defaultThreads();
  const modelPath = await ensureEmbeddedModel();
  const sequences = values.sequences ? Number(values.sequences) : DEFAULT_SEQUENCES;
  const loadStart = os.loadavg()[0]!;
  const rows = await measure(modelPath, threads, sequences);
  const loadEnd = os.loadavg()[0]!;
  console.log(
    `\nSmolLM2-135M-Instruct Q4_1, ${threads} thread(s), server sequences ${sequences} over ${defaultContexts(threads)} context(s), ${os.availableParallelism()} cores, ` +
      `load average ${loadStart.toFixed(2)}→${loadEnd.toFixed(2)}, max_tokens ${MAX_TOKENS}, greedy, median of ${REPEATS}\n`,
  );
  console.log(
    '| path | concurrent requests | completion tokens | wall s | tokens/s | tokens/s of each run | CPU ms/token (process) | load avg (median run) |',
  );
  console.log('|---|---:|---:|---:|---:|---|---:|---:|');
  for (const row of rows) {
    const rate = (row.tokens / row.seconds).toFixed(1);
    const each = (row.runs ?? []).map((r) => r.toFixed(1)).join(', ');
    console.log(
      `| ${row.path} | ${row.concurrency} | ${row.tokens} | ${row.seconds.toFixed(2)} | ${rate} | ${each} | ` +
        `${(row.cpuMs / row.tokens).toFixed(1)} | ${row.load[0].toFixed(1)}→${row.load[1].toFixed(1)} |`,
    );
  }
  const rate = (row: Row | undefined) => (row ? row.tokens / row.seconds : 0);
  const [raw, one, , four] = rows;
  const figures = [
    { figure: 'server ÷ raw node-llama-cpp tokens/s, 1 request', value: rate(one) / rate(raw), target: 0.95 },
    { figure: 'server tokens/s, 4 concurrent ÷ 1 request', value: rate(four) / rate(one), target: 1.5 },
  ];
  console.log('\n| figure | value | target | load avg over the run |');
  console.log('|---|---:|---:|---:|');
  for (const f of figures) {
    console.log(
      `| ${f.figure} | ${f.value.toFixed(2)} | ≥ ${f.target} (${f.value >= f.target ? 'met' : 'missed'}) | ` +
        `${loadStart.toFixed(1)}→${loadEnd.toFixed(1)} |`,
    );
  }
  const same = rows[0]?.text === rows[1]?.text;
  console.log(`\nGreedy answers of raw and server ${same ? 'are identical' : 'differ'}.`);

  await writeResults('embedded-model', {
    threads,
    sequences,
    contexts: defaultContexts(threads),
    maxTokens: MAX_TOKENS,
    repeats: REPEATS,
    loadAvg: { start: loadStart, end: loadEnd },
    greedyAnswersIdentical: same,
    rows: rows.map(({ text: _text, ...row }) => ({ ...row, tokensPerSecond: row.tokens / row.seconds })),
    // Read by bench/targets.ts.
    ratios: { serverOverRaw: figures[0]!.value, concurrent4OverOne: figures[1]!.value },
    figures,
  });
}

main().catch((error: Error) => {
  console.error(error);
  process.exit(1);
});
