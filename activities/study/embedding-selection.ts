import OpenAI from 'openai';
import type pg from 'pg';
import type { ModelEndpoint } from '../../schemas/model-endpoint.js';
import { EmbeddingAnswerError } from './errors.js';
import { selectDiverseResponses } from './protocols/selection.js';

export interface SelectByEmbeddingInput {
  readonly studyId: string;
  readonly questionId: string;
  readonly embeddings: ModelEndpoint;
  /**
   * R: the RS pool is the first R accepted responses. Rejection sampling draws whole waves, so a
   * question may have more accepted than R; selecting from those would make r = R differ from RS,
   * which the seed has equal by construction. Absent (older histories): every accepted response.
   */
  readonly accepted?: number;
}

/**
 * Embedding-based selection (seed 002 Sec. 7, DEITA's diversity criterion): embeds the RS pool of
 * one question (its first R accepted responses) and stores the greedy farthest-point order, whose
 * first r are the set at budget r (nested; r = 1 is RS's first accepted, r = R is RS's set).
 * Computed once: a stored order is never recomputed.
 */
export async function selectByEmbedding(
  pool: pg.Pool,
  input: SelectByEmbeddingInput,
): Promise<{ selected: number }> {
  const stored = await pool.query<{ n: number }>(
    'SELECT cardinality(selection) AS n FROM study_selections WHERE study_id = $1 AND question_id = $2',
    [input.studyId, input.questionId],
  );
  if (stored.rows[0]) return { selected: stored.rows[0].n };
  const { rows } = await pool.query<{ attempt: number; response: string }>(
    `SELECT attempt, response FROM study_attempts
      WHERE study_id = $1 AND stream = 'rs' AND question_id = $2 AND correct ORDER BY attempt LIMIT $3`,
    [input.studyId, input.questionId, input.accepted ?? null],
  );
  let order: number[] = [];
  if (rows.length > 0) {
    const client = new OpenAI({
      baseURL: input.embeddings.baseUrl,
      apiKey: (input.embeddings.apiKeyEnv && process.env[input.embeddings.apiKeyEnv]) || 'none',
      timeout: input.embeddings.timeoutMs,
      maxRetries: input.embeddings.maxRetries,
    });
    const response = await client.embeddings.create({
      model: input.embeddings.model,
      input: rows.map((r) => r.response),
      // Explicit: without it the SDK asks for base64 and decodes whatever comes back as base64,
      // which turns the float arrays of servers that ignore the field into garbage vectors.
      encoding_format: 'float',
    });
    const vectors = [...response.data].sort((a, b) => a.index - b.index).map((d) => d.embedding);
    if (vectors.length !== rows.length) {
      // Never store a selection computed from a short answer: it would be kept for good.
      throw new EmbeddingAnswerError(input.embeddings.baseUrl, rows.length, vectors.length);
    }
    // The greedy sets are nested, so the order is recovered from the sets of growing size.
    const picked = new Set<number>();
    for (let r = 1; r <= vectors.length; r++) {
      for (const index of selectDiverseResponses(vectors, r)) {
        if (!picked.has(index)) {
          picked.add(index);
          order.push(rows[index]!.attempt);
        }
      }
    }
  }
  await pool.query(
    `INSERT INTO study_selections (study_id, question_id, selection) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
    [input.studyId, input.questionId, order],
  );
  return { selected: order.length };
}
