import { createReadStream } from 'node:fs';

/** Refused lines recorded one by one, at most; beyond it they are only counted. */
export const MAX_RECORDED_REFUSALS = 10_000;

/**
 * The lines of a file, each as text, or `null` for a line longer than `maxBytes` (its bytes are
 * skipped as they stream by, so one enormous line cannot exhaust memory). A trailing CR is dropped.
 */
export async function* boundedLines(file: string, maxBytes: number): AsyncGenerator<string | null> {
  let parts: Buffer[] = [];
  let size = 0;
  let oversized = false;
  const line = (): string | null => {
    const text = oversized ? null : Buffer.concat(parts, size).toString('utf8').replace(/\r$/, '');
    parts = [];
    size = 0;
    oversized = false;
    return text;
  };
  const take = (piece: Buffer) => {
    if (oversized) return;
    size += piece.length;
    if (size > maxBytes) {
      oversized = true;
      parts = [];
    } else parts.push(piece);
  };
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    let start = 0;
    for (let end = chunk.indexOf(10); end >= 0; end = chunk.indexOf(10, start)) {
      take(chunk.subarray(start, end));
      yield line();
      start = end + 1;
    }
    take(chunk.subarray(start));
  }
  if (size > 0 || oversized) yield line();
}

/** The lines a reader kept (with their line numbers) and what it refused, counted by reason. */
export interface CheckedLines<T> {
  readonly chosen: readonly { readonly line: number; readonly value: T }[];
  /** The first {@link MAX_RECORDED_REFUSALS} refused lines, each with its reason. */
  readonly refused: readonly { readonly line: number; readonly reason: string }[];
  readonly rejected: number;
  readonly rejectedByReason: Record<string, number>;
}

/**
 * Reads a JSONL file of user data: each non-blank line (at most `maxLineBytes`) is checked by
 * `check`, which answers the value or why the line is refused; the first `offset` valid values are
 * skipped and at most `limit` kept. Memory stays bounded: long lines are never held, values before
 * the offset are counted, not kept, and refusals past the cap only counted.
 */
export async function readCheckedLines<T>(
  file: string,
  options: {
    readonly offset: number;
    readonly limit: number;
    readonly maxLineBytes: number;
    readonly check: (text: string) => T | string;
  },
): Promise<CheckedLines<T>> {
  const chosen: { line: number; value: T }[] = [];
  const refused: { line: number; reason: string }[] = [];
  const rejectedByReason: Record<string, number> = {};
  let rejected = 0;
  const refuse = (line: number, reason: string) => {
    rejected++;
    rejectedByReason[reason] = (rejectedByReason[reason] ?? 0) + 1;
    if (refused.length < MAX_RECORDED_REFUSALS) refused.push({ line, reason });
  };
  let validSeen = 0;
  let line = 0;
  for await (const text of boundedLines(file, options.maxLineBytes)) {
    line++;
    if (text === null) {
      refuse(line, `line longer than ${options.maxLineBytes} bytes`);
      continue;
    }
    if (text.trim() === '') continue;
    const checked = options.check(text);
    if (typeof checked === 'string') refuse(line, checked);
    else if (validSeen++ >= options.offset) chosen.push({ line, value: checked });
    if (chosen.length >= options.limit) break;
  }
  return { chosen, refused, rejected, rejectedByReason };
}
