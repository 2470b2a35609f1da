import { randomUUID } from 'node:crypto';

/**
 * The OpenAI Batch API as the test model server plays it (model-server.ts): files (upload,
 * content), batches (create, retrieve, list, cancel), answering each line with the server's own
 * script. Faults are those of a real provider's batch jobs: a job that expires with part of its
 * lines answered, lines that fail, a job that never completes until cancelled, an output file that
 * holds a line twice.
 */

/** A fault of the next batch job created (of `role`, when it names one). */
export type BatchFault =
  | { readonly kind: 'expire'; readonly role?: string; readonly answeredFraction?: number }
  | { readonly kind: 'fail-lines'; readonly role?: string; readonly failedFraction?: number }
  | { readonly kind: 'never-complete'; readonly role?: string }
  | { readonly kind: 'duplicate-output'; readonly role?: string }
  /** The next `times` batch creations are refused with a 400 (a file the provider will not take). */
  | { readonly kind: 'refuse-create'; readonly role?: string; times: number };

/** What the double counts: the lines a real provider would bill, per custom id. */
export interface BatchStats {
  jobsCreated: number;
  jobsCancelled: number;
  filesUploaded: number;
  /** Lines answered (billed), per custom id: a value over 1 is an answer paid twice. */
  billedByCustomId: Record<string, number>;
  /** Lines answered, per role of the job. */
  billedByRole: Record<string, number>;
}

/** Answers one line's chat body as a completion object, for a job of `role`. */
export type LineAnswerer = (body: Record<string, unknown>, role: string | undefined) => Promise<unknown>;

interface StoredFile {
  readonly id: string;
  readonly filename: string;
  readonly purpose: string;
  readonly content: string;
  readonly createdAt: number;
}

interface Batch {
  readonly id: string;
  readonly inputFileId: string;
  readonly metadata: Record<string, string>;
  readonly createdAt: number;
  status: string;
  outputFileId: string | null;
  errorFileId: string | null;
  counts: { total: number; completed: number; failed: number };
  fault: BatchFault | undefined;
}

interface Reply {
  readonly status: number;
  readonly body: unknown;
  readonly raw?: string;
}

/** The batch half of the test model server. */
export interface BatchDouble {
  readonly stats: BatchStats;
  injectFaults(...faults: BatchFault[]): void;
  /** Milliseconds between a job's creation and its completion. */
  setCompletionDelay(ms: number): void;
  /** Answers a request under /v1/files or /v1/batches; undefined for any other path. */
  handle(
    method: string,
    path: string,
    query: URLSearchParams,
    body: string,
    contentType: string,
  ): Promise<Reply | undefined>;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);
const notFound = (what: string): Reply => ({
  status: 404,
  body: { error: { message: `no such ${what}`, type: 'invalid_request_error' } },
});

/** Creates the batch double over the server's line answerer. */
export function createBatchDouble(answer: LineAnswerer): BatchDouble {
  const files = new Map<string, StoredFile>();
  const batches = new Map<string, Batch>();
  const faults: BatchFault[] = [];
  let completionDelayMs = 0;
  const stats: BatchStats = {
    jobsCreated: 0,
    jobsCancelled: 0,
    filesUploaded: 0,
    billedByCustomId: {},
    billedByRole: {},
  };

  function storeFile(filename: string, purpose: string, content: string): StoredFile {
    const file = { id: `file-${randomUUID()}`, filename, purpose, content, createdAt: nowSeconds() };
    files.set(file.id, file);
    return file;
  }

  const fileObject = (f: StoredFile) => ({
    id: f.id,
    object: 'file',
    bytes: Buffer.byteLength(f.content),
    created_at: f.createdAt,
    filename: f.filename,
    purpose: f.purpose,
    status: 'processed',
  });

  const batchObject = (b: Batch) => ({
    id: b.id,
    object: 'batch',
    endpoint: '/v1/chat/completions',
    errors: null,
    input_file_id: b.inputFileId,
    completion_window: '24h',
    status: b.status,
    output_file_id: b.outputFileId,
    error_file_id: b.errorFileId,
    created_at: b.createdAt,
    request_counts: b.counts,
    metadata: b.metadata,
  });

  /** Answers the job's lines as its fault says, then writes its output and error files. */
  async function run(batch: Batch): Promise<void> {
    const lines = files
      .get(batch.inputFileId)!
      .content.split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as { custom_id: string; body: Record<string, unknown> });
    batch.counts.total = lines.length;
    batch.status = 'in_progress';
    if (completionDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, completionDelayMs));
    const fault = batch.fault;
    if (fault?.kind === 'never-complete') return; // until cancelled
    const answeredCount =
      fault?.kind === 'expire'
        ? Math.floor(lines.length * (fault.answeredFraction ?? 0.5))
        : fault?.kind === 'fail-lines'
          ? lines.length - Math.ceil(lines.length * (fault.failedFraction ?? 0.5))
          : lines.length;
    const role = batch.metadata.mockworld_role;
    const outputs: string[] = [];
    const errors: string[] = [];
    for (const [i, line] of lines.entries()) {
      if (i >= answeredCount) {
        if (fault?.kind === 'fail-lines') {
          errors.push(
            JSON.stringify({
              id: `batch_req_${randomUUID()}`,
              custom_id: line.custom_id,
              response: {
                status_code: 500,
                request_id: randomUUID(),
                body: { error: { message: 'injected line failure', type: 'server_error' } },
              },
              error: null,
            }),
          );
        } else {
          errors.push(
            JSON.stringify({
              id: `batch_req_${randomUUID()}`,
              custom_id: line.custom_id,
              response: null,
              error: {
                code: 'batch_expired',
                message: 'This request could not be executed before the completion window expired.',
              },
            }),
          );
        }
        continue;
      }
      const completion = await answer(line.body, role);
      stats.billedByCustomId[line.custom_id] = (stats.billedByCustomId[line.custom_id] ?? 0) + 1;
      stats.billedByRole[role ?? '(none)'] = (stats.billedByRole[role ?? '(none)'] ?? 0) + 1;
      const out = JSON.stringify({
        id: `batch_req_${randomUUID()}`,
        custom_id: line.custom_id,
        response: { status_code: 200, request_id: randomUUID(), body: completion },
        error: null,
      });
      outputs.push(out);
      if (fault?.kind === 'duplicate-output') outputs.push(out);
    }
    finish(batch, fault?.kind === 'expire' ? 'expired' : 'completed', outputs, errors, answeredCount);
  }

  function finish(
    batch: Batch,
    status: string,
    outputs: string[],
    errors: string[],
    completed: number,
  ): void {
    if (outputs.length > 0)
      batch.outputFileId = storeFile(
        `${batch.id}_output.jsonl`,
        'batch_output',
        outputs.join('\n') + '\n',
      ).id;
    if (errors.length > 0)
      batch.errorFileId = storeFile(`${batch.id}_error.jsonl`, 'batch_output', errors.join('\n') + '\n').id;
    batch.counts = { total: batch.counts.total, completed, failed: batch.counts.total - completed };
    batch.status = status;
  }

  function takeFault(role: string | undefined): BatchFault | undefined {
    const at = faults.findIndex((f) => f.role === undefined || f.role === role);
    return at >= 0 ? faults.splice(at, 1)[0] : undefined;
  }

  async function upload(body: string, contentType: string): Promise<Reply> {
    const form = await new Request('http://double/v1/files', {
      method: 'POST',
      headers: { 'content-type': contentType },
      body,
    }).formData();
    const file = form.get('file');
    if (!(file instanceof Blob))
      return { status: 400, body: { error: { message: 'no file part', type: 'invalid_request_error' } } };
    stats.filesUploaded += 1;
    const name = 'name' in file && typeof file.name === 'string' ? file.name : 'upload.jsonl';
    return {
      status: 200,
      body: fileObject(storeFile(name, String(form.get('purpose') ?? 'batch'), await file.text())),
    };
  }

  function create(body: string): Reply {
    const request = JSON.parse(body) as { input_file_id: string; metadata?: Record<string, string> };
    if (!files.has(request.input_file_id)) return notFound('file');
    const metadata = request.metadata ?? {};
    const refusal = faults.find(
      (f) => f.kind === 'refuse-create' && (f.role === undefined || f.role === metadata.mockworld_role),
    );
    if (refusal?.kind === 'refuse-create') {
      if (--refusal.times <= 0) faults.splice(faults.indexOf(refusal), 1);
      return {
        status: 400,
        body: { error: { message: 'injected: the input file was refused', type: 'invalid_request_error' } },
      };
    }
    const batch: Batch = {
      id: `batch_${randomUUID()}`,
      inputFileId: request.input_file_id,
      metadata,
      createdAt: nowSeconds(),
      status: 'validating',
      outputFileId: null,
      errorFileId: null,
      counts: { total: 0, completed: 0, failed: 0 },
      fault: takeFault(metadata.mockworld_role),
    };
    batches.set(batch.id, batch);
    stats.jobsCreated += 1;
    void run(batch);
    return { status: 200, body: batchObject(batch) };
  }

  function list(query: URLSearchParams): Reply {
    const all = [...batches.values()].reverse(); // newest first, as the provider lists them
    const after = query.get('after');
    const start = after ? all.findIndex((b) => b.id === after) + 1 : 0;
    const limit = Number(query.get('limit') ?? 20);
    const page = all.slice(start, start + limit);
    return {
      status: 200,
      body: {
        object: 'list',
        data: page.map(batchObject),
        first_id: page[0]?.id ?? null,
        last_id: page.at(-1)?.id ?? null,
        has_more: start + limit < all.length,
      },
    };
  }

  function cancel(batch: Batch): Reply {
    if (['validating', 'in_progress'].includes(batch.status)) {
      stats.jobsCancelled += 1;
      finish(batch, 'cancelled', [], [], 0);
    }
    return { status: 200, body: batchObject(batch) };
  }

  return {
    stats,
    injectFaults: (...more) => faults.push(...more),
    setCompletionDelay: (ms) => (completionDelayMs = ms),
    async handle(method, path, query, body, contentType) {
      const parts = path.split('/').filter(Boolean); // v1, files|batches, id?, action?
      if (parts[0] !== 'v1' || (parts[1] !== 'files' && parts[1] !== 'batches')) return undefined;
      const [, kind, id, action] = parts;
      if (kind === 'files') {
        if (method === 'POST' && !id) return upload(body, contentType);
        const file = id ? files.get(id) : undefined;
        if (!file) return notFound('file');
        if (method === 'GET' && action === 'content')
          return { status: 200, body: undefined, raw: file.content };
        if (method === 'GET' && !action) return { status: 200, body: fileObject(file) };
        return undefined;
      }
      if (method === 'POST' && !id) return create(body);
      if (method === 'GET' && !id) return list(query);
      const batch = id ? batches.get(id) : undefined;
      if (!batch) return notFound('batch');
      if (method === 'GET' && !action) return { status: 200, body: batchObject(batch) };
      if (method === 'POST' && action === 'cancel') return cancel(batch);
      return undefined;
    },
  };
}
