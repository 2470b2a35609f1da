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
 * A copy of a JSON value (as `JSON.parse` returns it) whose strings and keys are all storable.
 * Keys such as `__proto__` stay own properties, as `JSON.parse` made them.
 */
export function storableJson<T>(value: T): T {
  return copy(value) as T;
}

function copy(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(copy);
  if (value !== null && typeof value === 'object') {
    // fromEntries defines own properties: a "__proto__" key is kept, never set as the prototype.
    return Object.fromEntries(Object.entries(value).map(([key, v]) => [storableText(key), copy(v)]));
  }
  return value;
}
