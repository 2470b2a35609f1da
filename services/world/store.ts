import { createHash } from 'node:crypto';
import type pg from 'pg';
import { canonicalJson } from '../../activities/llm/cache-key.js';
import { HttpError } from '../http/json-http.js';

/**
 * The world service's records in PostgreSQL (migration 020): sessions, and each answered request
 * by its id. Answers are stored once (first writer wins), so a request retried by a framework, on
 * this replica or another, gets exactly the first answer.
 */

export type SessionStatus = 'open' | 'judged' | 'closed';
export type RequestKind = 'open' | 'tool' | 'ask_user' | 'judge' | 'close';

export interface Session {
  readonly sessionId: string;
  readonly taskId: string;
  readonly status: SessionStatus;
}

/** The session an opening request id names: one id, one session, on every replica. */
export function sessionIdOf(requestId: string): string {
  return `ws-${createHash('sha256').update(requestId).digest('hex').slice(0, 32)}`;
}

export async function createSession(pool: pg.Pool, sessionId: string, taskId: string): Promise<void> {
  await pool.query(
    `INSERT INTO world_sessions (session_id, task_id) VALUES ($1, $2) ON CONFLICT (session_id) DO NOTHING`,
    [sessionId, taskId],
  );
}

export async function findSession(pool: pg.Pool, sessionId: string): Promise<Session> {
  const { rows } = await pool.query<{ session_id: string; task_id: string; status: SessionStatus }>(
    'SELECT session_id, task_id, status FROM world_sessions WHERE session_id = $1',
    [sessionId],
  );
  const row = rows[0];
  if (!row) throw new HttpError(404, `no session ${sessionId}; open one with POST /v1/sessions`);
  return { sessionId: row.session_id, taskId: row.task_id, status: row.status };
}

export async function setStatus(pool: pg.Pool, sessionId: string, status: SessionStatus): Promise<void> {
  // Closed is final; judged only moves on to closed.
  await pool.query(
    `UPDATE world_sessions SET status = $2, updated_at = now()
      WHERE session_id = $1 AND status <> 'closed' AND NOT (status = 'judged' AND $2 = 'open')`,
    [sessionId, status],
  );
}

/** The questions and answers of a session so far, in order (what the simulated user remembers). */
export async function dialogueOf(
  pool: pg.Pool,
  sessionId: string,
): Promise<{ question: string; answer: string }[]> {
  const { rows } = await pool.query<{ response: { question: string; answer: string } }>(
    `SELECT response FROM world_requests WHERE session_id = $1 AND kind = 'ask_user' ORDER BY created_at, request_id`,
    [sessionId],
  );
  return rows.map((row) => ({ question: row.response.question, answer: row.response.answer }));
}

/**
 * Answers a request once: a request id seen before gets its stored answer (the same kind, session
 * and body, else 409); a new one is computed, stored if absent, and the stored answer (this one,
 * or a concurrent twin's) returned.
 */
export async function answerOnce<T>(
  pool: pg.Pool,
  request: { requestId: string; sessionId: string; kind: RequestKind; body: unknown },
  compute: () => Promise<T>,
): Promise<T> {
  const bodyHash = createHash('sha256')
    .update(canonicalJson({ kind: request.kind, session: request.sessionId, body: request.body }))
    .digest('hex');
  const stored = await storedAnswer<T>(pool, request.requestId, bodyHash);
  if (stored !== undefined) return stored;
  const answer = await compute();
  await pool.query(
    `INSERT INTO world_requests (request_id, session_id, kind, body_hash, response)
     VALUES ($1, $2, $3, $4, $5::jsonb) ON CONFLICT (request_id) DO NOTHING`,
    [request.requestId, request.sessionId, request.kind, bodyHash, JSON.stringify(answer)],
  );
  return (await storedAnswer<T>(pool, request.requestId, bodyHash)) ?? answer;
}

async function storedAnswer<T>(pool: pg.Pool, requestId: string, bodyHash: string): Promise<T | undefined> {
  const { rows } = await pool.query<{ body_hash: string; response: T }>(
    'SELECT body_hash, response FROM world_requests WHERE request_id = $1',
    [requestId],
  );
  const row = rows[0];
  if (!row) return undefined;
  if (row.body_hash !== bodyHash)
    throw new HttpError(409, `request_id ${requestId} was already used for another request; use a new id`);
  return row.response;
}
