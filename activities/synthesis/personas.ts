import { createReadStream } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type pg from 'pg';

/** Longest persona accepted, in characters; longer ones are refused, never cut. */
export const MAX_PERSONA_CHARS = 4_000;

/** Input of {@link loadPersonas}. */
export interface LoadPersonasInput {
  readonly runId: string;
  readonly path: string;
  readonly offset: number;
  /** Valid personas wanted after the offset. */
  readonly limit: number;
}

/** What was loaded: counts only, the personas themselves stay in PostgreSQL. */
export interface LoadPersonasResult {
  readonly loaded: number;
  readonly rejected: number;
  readonly rejectedByReason: Record<string, number>;
}

function checkLine(text: string): { id: string; persona: string } | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const { id, persona } = value as { id?: unknown; persona?: unknown };
  if ((typeof id !== 'string' && typeof id !== 'number') || String(id).trim() === '') return 'missing id';
  if (typeof persona !== 'string' || persona.trim() === '') return 'empty persona';
  if (persona.length > MAX_PERSONA_CHARS) return `persona longer than ${MAX_PERSONA_CHARS} characters`;
  return { id: String(id), persona: persona.trim() };
}

/**
 * Reads a persona JSONL file into `synthesis_personas` (valid lines, in order, deduplicated by id)
 * and records every refused line with its reason. Idempotent: a retry inserts nothing new.
 */
export async function loadPersonas(pool: pg.Pool, input: LoadPersonasInput): Promise<LoadPersonasResult> {
  const file = path.resolve(input.path);
  const valid: { id: string; persona: string }[] = [];
  const refused: { line: number; reason: string }[] = [];
  const ids = new Set<string>();
  const lines = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
  let lineNo = 0;
  try {
    for await (const text of lines) {
      lineNo++;
      if (text.trim() === '') continue;
      const checked = checkLine(text);
      if (typeof checked === 'string') refused.push({ line: lineNo, reason: checked });
      else if (ids.has(checked.id)) refused.push({ line: lineNo, reason: 'duplicate id' });
      else {
        ids.add(checked.id);
        valid.push(checked);
      }
      if (valid.length >= input.offset + input.limit) break;
    }
  } catch (error) {
    throw new Error(`Cannot read personas from ${file}: ${(error as Error).message}`);
  }
  const chosen = valid.slice(input.offset, input.offset + input.limit);
  await pool.query(
    `INSERT INTO synthesis_personas (run_id, idx, persona_id, persona)
     SELECT $1, t.idx, t.persona_id, t.persona
       FROM unnest($2::int[], $3::text[], $4::text[]) AS t(idx, persona_id, persona)
     ON CONFLICT DO NOTHING`,
    [input.runId, chosen.map((_, i) => i), chosen.map((p) => p.id), chosen.map((p) => p.persona)],
  );
  await pool.query(
    `INSERT INTO synthesis_persona_rejections (run_id, line, reason)
     SELECT $1, t.line, t.reason FROM unnest($2::int[], $3::text[]) AS t(line, reason)
     ON CONFLICT DO NOTHING`,
    [input.runId, refused.map((r) => r.line), refused.map((r) => r.reason)],
  );
  const rejectedByReason: Record<string, number> = {};
  for (const r of refused) rejectedByReason[r.reason] = (rejectedByReason[r.reason] ?? 0) + 1;
  return { loaded: chosen.length, rejected: refused.length, rejectedByReason };
}
