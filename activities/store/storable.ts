/**
 * PostgreSQL cannot store U+0000 in `text` or `jsonb`, and `jsonb` refuses unpaired UTF-16
 * surrogates (`\ud800` alone); an INSERT holding either fails, and a retried activity would fail
 * the same way forever. Text from models and files can hold both (a JSON escape is enough), so it
 * is made storable where it enters: each such character becomes U+FFFD.
 */
const UNSTORABLE_SOURCE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
  .source;
const UNSTORABLE = new RegExp(UNSTORABLE_SOURCE, 'g');
const HAS_UNSTORABLE = new RegExp(UNSTORABLE_SOURCE);

/** Whether `text` holds a character PostgreSQL cannot store (NUL, an unpaired surrogate). */
export function hasUnstorable(text: string): boolean {
  return HAS_UNSTORABLE.test(text);
}

/** `text` with NUL and unpaired surrogates replaced by U+FFFD. */
export function storableText(text: string): string {
  return text.replace(UNSTORABLE, '\uFFFD');
}

/**
 * Nesting kept by {@link storableJson}. Callers reject deeper model answers before parsing them
 * (activities/llm/answer-bounds.ts, limit 64); this is the backstop that keeps the copy (and the
 * JSON.stringify that writes it) off the end of the stack whatever reaches it.
 */
export const STORABLE_DEPTH = 128;

/** What stands in for a value nested deeper than {@link STORABLE_DEPTH}. */
export const TOO_DEEP_PLACEHOLDER = '[nested too deep: cut]';

/**
 * A copy of a JSON value (as `JSON.parse` returns it) whose strings and keys are all storable.
 * Keys such as `__proto__` stay own properties, as `JSON.parse` made them. Values nested deeper
 * than {@link STORABLE_DEPTH} become {@link TOO_DEEP_PLACEHOLDER}: a recursive copy of a
 * 5,000-deep array threw RangeError, which a retried activity met again forever.
 */
export function storableJson<T>(value: T): T {
  return copy(value, 0) as T;
}

function copy(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return storableText(value);
  if (value !== null && typeof value === 'object' && depth >= STORABLE_DEPTH) return TOO_DEEP_PLACEHOLDER;
  if (Array.isArray(value)) return value.map((v) => copy(v, depth + 1));
  if (value !== null && typeof value === 'object') {
    // fromEntries defines own properties: a "__proto__" key is kept, never set as the prototype.
    return Object.fromEntries(
      Object.entries(value).map(([key, v]) => [storableText(key), copy(v, depth + 1)]),
    );
  }
  return value;
}
