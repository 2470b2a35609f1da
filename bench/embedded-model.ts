/**
 * Generation speed of the embedded model: tokens/s through the OpenAI-compatible server (openai
 * client, HTTP, grammar-free chat) against raw node-llama-cpp (`LlamaChatSession.prompt`) on the
 * same model file, prompt, thread count, greedy sampling and `max_tokens`; plus the server with 2
 * and 4 concurrent requests (2 are batched, the rest wait). Each row is the median of REPEATS runs
 * (raw and single-request server runs alternate);
 * time includes prompt evaluation (the prompt is short) and, for the server, HTTP.
 *
 * Run: `npx tsx bench/embedded-model.ts [--threads N] [--sequences N]`. Prints a Markdown table.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { getLlama, LlamaChatSession, LlamaLogLevel } from 'node-llama-cpp';
import OpenAI from 'openai';
import { ensureEmbeddedModel } from '../deploy/embedded-model/fetch-model.js';
import { defaultThreads, startEmbeddedModelServer } from '../services/embedded-model/index.js';

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
  /** tokens/s of every measured run, in order. */
  readonly runs?: readonly number[];
}

/** Raw node-llama-cpp: a LlamaChatSession on its own context of the same model file. */
async function openRaw(modelPath: string, threads: number) {
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath });
  const context = await model.createContext({ sequences: 1, contextSize: 8192, threads });
  const sequence = context.getSequence();
  return {
    async run(): Promise<Row> {
      const session = new LlamaChatSession({
        contextSequence: sequence,
        autoDisposeSequence: false,
        systemPrompt: SYSTEM,
      });
      let tokens = 0;
      const start = performance.now();
      const text = await session.prompt(PROMPT, {
        maxTokens: MAX_TOKENS,
        temperature: 0,
        repeatPenalty: false,
        onToken: (t) => (tokens += t.length),
      });
      const seconds = (performance.now() - start) / 1000;
      session.dispose({ disposeSequence: false });
      return { path: 'raw node-llama-cpp (LlamaChatSession)', concurrency: 1, tokens, seconds, text };
    },
    async close() {
      await context.dispose();
      await model.dispose();
    },
  };
}

/** The embedded model server, called through the openai client with `concurrency` requests at once. */
async function runServer(client: OpenAI, model: string, concurrency: number): Promise<Row> {
  const start = performance.now();
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
  const seconds = (performance.now() - start) / 1000;
  const tokens = completions.reduce((sum, c) => sum + (c.usage?.completion_tokens ?? 0), 0);
  const text = completions[0]?.choices[0]?.message.content ?? '';
  return { path: 'embedded model server (openai client)', concurrency, tokens, seconds, text };
}

/**
 * Raw and server runs alternate (one warm-up each, then REPEATS pairs, the order flipping each
 * pair), so that load from other processes on the machine falls on both alike.
 */
async function measure(modelPath: string, threads: number, sequences: number): Promise<Row[]> {
  const server = await startEmbeddedModelServer({ port: 0, modelPath, threads, sequences });
  const rawModel = await openRaw(modelPath, threads);
  const client = new OpenAI({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
  try {
    const raws: Row[] = [];
    const singles: Row[] = [];
    for (let i = 0; i <= REPEATS; i++) {
      // Flip the order each pair, so that neither path always runs right after the other.
      const serverFirst = i % 2 === 1;
      const early = serverFirst ? await runServer(client, server.model, 1) : undefined;
      const r = await rawModel.run();
      const s = early ?? (await runServer(client, server.model, 1));
      if (i > 0) {
        raws.push(r);
        singles.push(s);
      }
    }
    const rows = [median(raws), median(singles)];
    for (const concurrency of [2, 4]) {
      const runs: Row[] = [];
      for (let i = 0; i <= REPEATS; i++) {
        const run = await runServer(client, server.model, concurrency);
        if (i > 0) runs.push(run);
      }
      rows.push(median(runs));
    }
    return rows;
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
  const sequences = values.sequences ? Number(values.sequences) : 2;
  const rows = await measure(modelPath, threads, sequences);
  const load = os.loadavg()[0]!.toFixed(2);
  console.log(
    `\nSmolLM2-135M-Instruct Q4_1, ${threads} thread(s), server sequences ${sequences}, ${os.availableParallelism()} cores, ` +
      `load average ${load}, max_tokens ${MAX_TOKENS}, greedy, median of ${REPEATS}\n`,
  );
  console.log(
    '| path | concurrent requests | completion tokens | wall s | tokens/s | tokens/s of each run |',
  );
  console.log('|---|---:|---:|---:|---:|---|');
  for (const row of rows) {
    const rate = (row.tokens / row.seconds).toFixed(1);
    const each = (row.runs ?? []).map((r) => r.toFixed(1)).join(', ');
    console.log(
      `| ${row.path} | ${row.concurrency} | ${row.tokens} | ${row.seconds.toFixed(2)} | ${rate} | ${each} |`,
    );
  }
  const same = rows[0]?.text === rows[1]?.text;
  console.log(`\nGreedy answers of raw and server ${same ? 'are identical' : 'differ'}.`);
}

main().catch((error: Error) => {
  console.error(error);
  process.exit(1);
});
