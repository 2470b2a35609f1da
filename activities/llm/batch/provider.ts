import OpenAI, { toFile } from 'openai';
import type { Batch } from 'openai/resources/batches';
import type { ModelEndpoint } from '../../../schemas/model-endpoint.js';

/**
 * A provider's Batch API (OpenAI's shape: upload a JSONL file, create a batch over it, poll it,
 * download its output and error files), through the `openai` client, which retries its own
 * transient failures. Other providers with the same shape (vLLM's batch runner behind a proxy,
 * Azure OpenAI, Together, Groq) are reached by their base URL.
 */

/** The provider's states after which a batch changes no more. */
export const FINAL_STATES: ReadonlySet<string> = new Set(['completed', 'expired', 'failed', 'cancelled']);

/** Metadata keys a job is created with: how a lost creation is found again. */
const JOB_KEY = 'mockworld_job';
const ROLE_KEY = 'mockworld_role';

/** A client for the endpoint; its key is read from the worker's environment, never stored. */
export function providerClient(endpoint: ModelEndpoint): OpenAI {
  return new OpenAI({
    baseURL: endpoint.baseUrl,
    apiKey: (endpoint.apiKeyEnv && process.env[endpoint.apiKeyEnv]) || 'unused',
    timeout: endpoint.timeoutMs,
    maxRetries: endpoint.maxRetries,
  });
}

/** One request line of a job: its custom id is the call's cache key. */
export interface JobLine {
  readonly customId: string;
  readonly body: unknown;
}

/**
 * The provider batch of job `jobId`, if one was created: searched newest first back to a minute
 * before the job was formed (a process that died between creating it and recording it leaves one).
 */
export async function findJobBatch(
  client: OpenAI,
  jobId: string,
  formedAtSeconds: number,
): Promise<Batch | undefined> {
  for await (const batch of client.batches.list({ limit: 100 })) {
    if (batch.metadata?.[JOB_KEY] === jobId) return batch;
    if (batch.created_at < formedAtSeconds - 60) return undefined;
  }
  return undefined;
}

/** Uploads the job's lines and creates its batch, tagged with the job id and ledger role. */
export async function createJobBatch(
  client: OpenAI,
  jobId: string,
  role: string | null,
  lines: readonly JobLine[],
): Promise<Batch> {
  const jsonl = lines
    .map((line) =>
      JSON.stringify({
        custom_id: line.customId,
        method: 'POST',
        url: '/v1/chat/completions',
        body: line.body,
      }),
    )
    .join('\n');
  const file = await client.files.create({
    file: await toFile(Buffer.from(`${jsonl}\n`), `mockworld-${jobId}.jsonl`),
    purpose: 'batch',
  });
  return client.batches.create({
    input_file_id: file.id,
    endpoint: '/v1/chat/completions',
    completion_window: '24h',
    metadata: { [JOB_KEY]: jobId, ...(role ? { [ROLE_KEY]: role.slice(0, 512) } : {}) },
  });
}

/** One line of an output or error file. */
export interface ResultLine {
  readonly custom_id: string;
  readonly response: { readonly status_code: number; readonly body: unknown } | null;
  readonly error: { readonly code?: string; readonly message?: string } | null;
}

/** The lines of a batch's output and error files (a file the batch has not got reads as none). */
export async function downloadResults(client: OpenAI, batch: Batch): Promise<ResultLine[]> {
  const read = async (fileId: string | null | undefined) => {
    if (!fileId) return [];
    const text = await (await client.files.content(fileId)).text();
    return text
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as ResultLine);
  };
  return [...(await read(batch.output_file_id)), ...(await read(batch.error_file_id))];
}
