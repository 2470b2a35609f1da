/**
 * The embedded model itself: one node-llama-cpp model, chat contexts (2 on a 2-core machine, each
 * decoding on its own thread) with a few sequences each that requests lease one at a time (a
 * request waits when all are busy; node-llama-cpp batches the busy sequences of one context
 * together), grammar-constrained generation, and an embedding context on the same model.
 *
 * A second context rather than more batching: on this CPU (AVX2, Q4_1 weights) a decode costs the
 * same CPU per token at batch 1, 2 and 4 (~20 ms on 1 thread), so only a second core adds tokens/s,
 * and the llama.cpp threads of one context spin while they wait for each other on busy cores.
 *
 * The chat template is resolved once, at load: `new LlamaChat()` otherwise resolves it on every
 * request, rendering the model's Jinja template against node-llama-cpp's specialised wrappers
 * (0.8–1.6 s of main-thread CPU per request on 2 shared cores, stalling every other request's tokens).
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import type {
  ChatWrapper,
  Llama,
  LlamaContext,
  LlamaEmbeddingContext,
  LlamaGrammar,
  LlamaModel,
  Token,
} from 'node-llama-cpp';
import { EMBEDDED_MODEL, ensureEmbeddedModel } from '../../deploy/embedded-model/fetch-model.js';
import { planChat, toAnswer, type AssistantAnswer, type OutputMode } from './chat-prompt.js';
import { badRequest } from './errors.js';
import { loadLlamaCpp, type LlamaCpp } from '../../deploy/embedded-model/llama-runtime.js';
import { createSchemaGrammar } from './schema-grammar.js';
import { SequencePool } from './sequence-pool.js';
import type { ChatCompletionRequest, EmbeddingRequest } from '../../schemas/openai-chat.js';

/** Options of {@link EmbeddedModel.load}. */
export interface EmbeddedModelOptions {
  /** A `.gguf` file; default: the pinned SmolLM2 fetched by `ensureEmbeddedModel()`. */
  readonly modelPath?: string;
  /** Name reported in responses; default `smollm2-135m-instruct`. */
  readonly modelName?: string;
  /**
   * CPU threads per evaluation. Default: half the cores, at least 1 and at most 4. llama.cpp threads
   * spin while they wait for each other, so more threads than free cores makes generation many
   * times slower (measured on 2 busy cores: 1 thread 11 tok/s, 2 threads 2.6 tok/s).
   */
  readonly threads?: number;
  /**
   * Requests generated at the same time (those of one context decoded in one batch); others wait.
   * Default {@link DEFAULT_SEQUENCES}. Each sequence holds its own KV cache of `contextSize` cells.
   */
  readonly sequences?: number;
  /**
   * Chat contexts the sequences are spread over, each decoding on its own `threads` threads, so that
   * concurrent requests use more than one core without llama.cpp threads waiting on each other.
   * Each context also holds its own compute buffer (~100 MiB for SmolLM2-135M).
   * Default {@link defaultContexts}.
   */
  readonly contexts?: number;
  /**
   * Context window per sequence, in tokens (prompt + completion). Default: the model's, at most
   * {@link DEFAULT_CONTEXT_SIZE}.
   */
  readonly contextSize?: number;
}

/** An OpenAI `chat.completion` object. */
export interface ChatCompletion {
  readonly id: string;
  readonly object: 'chat.completion';
  readonly created: number;
  readonly model: string;
  readonly system_fingerprint: string;
  readonly choices: {
    readonly index: number;
    readonly message: { readonly role: 'assistant'; readonly refusal: null } & Omit<
      AssistantAnswer,
      'finish_reason'
    >;
    readonly finish_reason: AssistantAnswer['finish_reason'];
    readonly logprobs: null;
  }[];
  readonly usage: {
    readonly prompt_tokens: number;
    readonly completion_tokens: number;
    readonly total_tokens: number;
  };
}

/** An OpenAI embeddings `list` object. */
export interface EmbeddingList {
  readonly object: 'list';
  readonly model: string;
  readonly data: {
    readonly object: 'embedding';
    readonly index: number;
    readonly embedding: number[] | string;
  }[];
  readonly usage: { readonly prompt_tokens: number; readonly total_tokens: number };
}

/** Chat sequences by default, over all contexts: requests generated at the same time. */
export const DEFAULT_SEQUENCES = 4;

/** Largest default context window per sequence, in tokens. */
export const DEFAULT_CONTEXT_SIZE = 8192;

/** Tokens one embedding input may have. */
const EMBEDDING_CONTEXT_SIZE = 2048;

/**
 * Default number of chat contexts: as many as `threads`-thread decodes fit on the cores (at least
 * 1, at most 2). See {@link EmbeddedModelOptions.contexts}.
 */
export function defaultContexts(threads = defaultThreads()): number {
  return Math.min(2, Math.max(1, Math.floor(os.availableParallelism() / threads)));
}

/** Default number of evaluation threads for this machine; see {@link EmbeddedModelOptions.threads}. */
export function defaultThreads(): number {
  return Math.min(4, Math.max(1, Math.floor(os.availableParallelism() / 2)));
}

/** The loaded model with its chat and embedding contexts. */
export class EmbeddedModel {
  private readonly pool: SequencePool;
  private readonly grammars = new Map<string, Promise<LlamaGrammar>>();
  private embeddingContext?: Promise<LlamaEmbeddingContext>;
  private embeddingQueue: Promise<unknown> = Promise.resolve();
  private readonly chatWrapper: ChatWrapper;

  private constructor(
    /** Name reported in responses. */
    readonly name: string,
    private readonly llama: Llama,
    private readonly model: LlamaModel,
    private readonly contexts: readonly LlamaContext[],
    private readonly threads: number,
    private readonly llamaCpp: LlamaCpp,
  ) {
    const sequences = contexts.map((context) =>
      Array.from({ length: context.totalSequences }, () => context.getSequence()),
    );
    this.pool = new SequencePool(sequences);
    this.chatWrapper = llamaCpp.resolveChatWrapper(model);
  }

  /** Loads the model (fetching the pinned one when no path is given) and allocates its contexts. */
  static async load(options: EmbeddedModelOptions = {}): Promise<EmbeddedModel> {
    const modelPath = options.modelPath ?? (await ensureEmbeddedModel());
    const threads = options.threads ?? defaultThreads();
    // Never build or download llama.cpp at run time: the prebuilt CPU binary ships with the package.
    const { module: llamaCpp } = await loadLlamaCpp();
    const llama = await llamaCpp.getLlama({
      gpu: false,
      build: 'never',
      logLevel: llamaCpp.LlamaLogLevel.error,
    });
    const model = await llama.loadModel({ modelPath });
    const sequences = Math.max(1, options.sequences ?? DEFAULT_SEQUENCES);
    const contextCount = Math.min(sequences, Math.max(1, options.contexts ?? defaultContexts(threads)));
    const contexts: LlamaContext[] = [];
    try {
      for (let index = 0; index < contextCount; index++) {
        contexts.push(
          await model.createContext({
            // Sequences spread evenly: 4 over 2 contexts is 2 + 2, 5 is 3 + 2.
            sequences: Math.ceil((sequences - index) / contextCount),
            contextSize: options.contextSize ?? Math.min(DEFAULT_CONTEXT_SIZE, model.trainContextSize),
            threads,
          }),
        );
      }
    } catch (error) {
      for (const context of contexts) await context.dispose();
      await model.dispose();
      throw error;
    }
    return new EmbeddedModel(
      options.modelName ?? EMBEDDED_MODEL.name,
      llama,
      model,
      contexts,
      threads,
      llamaCpp,
    );
  }

  /** Context window per request, in tokens. */
  get contextSize(): number {
    return this.contexts[0]!.contextSize;
  }

  /** Answers one chat completion request; `signal` aborts a queued or running generation. */
  async complete(request: ChatCompletionRequest, signal?: AbortSignal): Promise<ChatCompletion> {
    const plan = planChat(request);
    const grammar = await this.grammarFor(plan.mode);
    const sequence = await this.pool.acquire(signal);
    const chat = new this.llamaCpp.LlamaChat({
      contextSequence: sequence,
      chatWrapper: this.chatWrapper,
      autoDisposeSequence: false,
    });
    try {
      const promptTokens = chat.chatWrapper
        .generateContextState({ chatHistory: plan.history })
        .contextText.tokenize(this.model.tokenizer).length;
      const room = this.contextSize - promptTokens;
      const requested = request.max_completion_tokens ?? request.max_tokens ?? undefined;
      if (room < 1 || (requested !== undefined && requested > room)) {
        throw badRequest(
          `This model's context is ${this.contextSize} tokens; the messages take ${promptTokens} and ` +
            `${requested ?? 1} more were requested for the completion. Shorten the messages or lower max_tokens.`,
          'messages',
          'context_length_exceeded',
        );
      }
      const penalties =
        request.presence_penalty || request.frequency_penalty
          ? {
              penalty: 1,
              presencePenalty: request.presence_penalty ?? 0,
              frequencyPenalty: request.frequency_penalty ?? 0,
            }
          : false;
      const stop =
        request.stop == null ? [] : typeof request.stop === 'string' ? [request.stop] : request.stop;

      const choices: ChatCompletion['choices'][number][] = [];
      let completionTokens = 0;
      for (let index = 0; index < (request.n ?? 1); index++) {
        const response = await chat.generateResponse(plan.history, {
          maxTokens: requested ?? room,
          temperature: request.temperature ?? 1,
          topP: request.top_p ?? 1,
          seed: request.seed == null ? undefined : request.seed + index,
          repeatPenalty: penalties,
          customStopTriggers: stop.length > 0 ? stop : undefined,
          grammar,
          signal,
          onToken: (tokens) => {
            completionTokens += tokens.length;
          },
        });
        const truncated = response.metadata.stopReason === 'maxTokens';
        const text = plan.mode.kind === 'text' ? response.response : response.response.trim();
        const { finish_reason, ...message } = toAnswer(plan.mode, text, truncated);
        choices.push({
          index,
          message: { role: 'assistant', refusal: null, ...message },
          finish_reason,
          logprobs: null,
        });
      }
      return {
        id: `chatcmpl-${randomBytes(12).toString('hex')}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: this.name,
        system_fingerprint: `node-llama-cpp-${EMBEDDED_MODEL.ggufSha256.slice(0, 12)}`,
        choices,
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
        },
      };
    } finally {
      chat.dispose({ disposeSequence: false });
      this.pool.release(sequence);
    }
  }

  /** Embeds the inputs of one request (mean-pooled by llama.cpp, L2-normalised here like OpenAI's). */
  async embed(request: EmbeddingRequest): Promise<EmbeddingList> {
    const inputs: (string | Token[])[] =
      typeof request.input === 'string'
        ? [request.input]
        : typeof request.input[0] === 'number'
          ? [request.input as Token[]]
          : (request.input as (string | Token[])[]);
    const context = await this.embeddings();
    const run = this.embeddingQueue.then(async () => {
      const vectors: number[][] = [];
      let tokens = 0;
      for (const [index, input] of inputs.entries()) {
        const tokenized = typeof input === 'string' ? this.model.tokenize(input) : input;
        if (tokenized.length > EMBEDDING_CONTEXT_SIZE) {
          throw badRequest(
            `input.${index} has ${tokenized.length} tokens; the embedding context holds ${EMBEDDING_CONTEXT_SIZE}.`,
            'input',
            'context_length_exceeded',
          );
        }
        tokens += tokenized.length;
        const { vector } = await context.getEmbeddingFor(tokenized);
        vectors.push(normalise(Array.from(vector), request.dimensions ?? undefined));
      }
      return { vectors, tokens };
    });
    this.embeddingQueue = run.catch(() => undefined);
    const { vectors, tokens } = await run;
    const base64 = request.encoding_format === 'base64';
    return {
      object: 'list',
      model: this.name,
      data: vectors.map((v, index) => ({
        object: 'embedding',
        index,
        embedding: base64 ? Buffer.from(new Float32Array(v).buffer).toString('base64') : v,
      })),
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    };
  }

  /** Number of dimensions of the embeddings. */
  get embeddingDimensions(): number {
    return this.model.embeddingVectorSize;
  }

  /** Frees the contexts and the model; pending requests fail. */
  async dispose(): Promise<void> {
    this.pool.close();
    const embedding = await this.embeddingContext?.catch(() => undefined);
    await embedding?.dispose();
    for (const context of this.contexts) await context.dispose();
    await this.model.dispose();
  }

  private embeddings(): Promise<LlamaEmbeddingContext> {
    this.embeddingContext ??= this.model.createEmbeddingContext({
      contextSize: EMBEDDING_CONTEXT_SIZE,
      threads: this.threads,
    });
    return this.embeddingContext;
  }

  private grammarFor(mode: OutputMode): Promise<LlamaGrammar> | undefined {
    if (mode.kind === 'text') return undefined;
    const spec = mode.grammar;
    const key = spec === 'any' ? 'any' : JSON.stringify(spec);
    let grammar = this.grammars.get(key);
    if (!grammar) {
      grammar = (
        spec === 'any' ? this.llama.getGrammarFor('json') : createSchemaGrammar(this.llama, spec)
      ).catch((error: Error) => {
        this.grammars.delete(key);
        throw badRequest(`Cannot build a grammar for this JSON Schema: ${error.message}`, 'response_format');
      });
      if (this.grammars.size >= 128) this.grammars.delete(this.grammars.keys().next().value!);
      this.grammars.set(key, grammar);
    }
    return grammar;
  }
}

function normalise(vector: number[], dimensions: number | undefined): number[] {
  if (dimensions !== undefined && dimensions > vector.length) {
    throw badRequest(`dimensions must be at most ${vector.length} for this model`, 'dimensions');
  }
  const kept = dimensions === undefined ? vector : vector.slice(0, dimensions);
  const norm = Math.sqrt(kept.reduce((sum, x) => sum + x * x, 0)) || 1;
  return kept.map((x) => x / norm);
}
