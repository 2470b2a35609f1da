import type pg from 'pg';
import { resolveDataFile } from '../data-files.js';
import { hasUnstorable } from '../store/storable.js';
import { PersonaFileError } from './errors.js';
import { readCheckedLines, type CheckedLines } from './checked-lines.js';

/** Longest persona accepted, in characters; longer ones are refused, never cut. */
export const MAX_PERSONA_CHARS = 4_000;

/** Longest persona id accepted; ids become parts of task rows and logs. */
export const MAX_PERSONA_ID_CHARS = 200;

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
  if (String(id).length > MAX_PERSONA_ID_CHARS) return `id longer than ${MAX_PERSONA_ID_CHARS} characters`;
  // PostgreSQL text cannot hold NUL; an unpaired surrogate would be stored altered (U+FFFD).
  if (hasUnstorable(String(id)) || hasUnstorable(persona)) return 'NUL or unpaired surrogate character';
  return { id: String(id), persona: persona.trim() };
}

/** Longest persona line read, in bytes; longer lines are refused without being held in memory. */
export const MAX_PERSONA_LINE_BYTES = 64 * 1024;

/**
 * Reads a persona JSONL file into `synthesis_personas` (valid lines, in order, deduplicated by id)
 * and records every refused line with its reason. Idempotent: a retry inserts nothing new.
 * Memory stays bounded: lines are capped, personas before the offset are counted, not kept.
 */
export async function loadPersonas(pool: pg.Pool, input: LoadPersonasInput): Promise<LoadPersonasResult> {
  const file = resolveDataFile(input.path, 'personas');
  const ids = new Set<string>();
  const unique = (text: string) => {
    const checked = checkLine(text);
    if (typeof checked === 'string') return checked;
    if (ids.has(checked.id)) return 'duplicate id';
    ids.add(checked.id);
    return checked;
  };
  let read: CheckedLines<{ id: string; persona: string }>;
  try {
    read = await readCheckedLines(file, {
      offset: input.offset,
      limit: input.limit,
      maxLineBytes: MAX_PERSONA_LINE_BYTES,
      check: unique,
    });
  } catch (error) {
    throw new PersonaFileError(file, (error as Error).message);
  }
  const chosen = read.chosen.map((c) => c.value);
  const { refused, rejected, rejectedByReason } = read;
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
  return { loaded: chosen.length, rejected, rejectedByReason };
}
