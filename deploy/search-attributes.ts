import type { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { MOCKWORLD_SEARCH_ATTRIBUTES } from '../workflows/search-attributes.js';

// A CommonJS package: Node's ESM loader sees only its default export.
const { temporal } = proto;
const IndexedValueType = temporal.api.enums.v1.IndexedValueType;
type IndexedValueType = proto.temporal.api.enums.v1.IndexedValueType;

const PROTO_TYPE: Record<string, IndexedValueType> = {
  KEYWORD: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  TEXT: IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  INT: IndexedValueType.INDEXED_VALUE_TYPE_INT,
  DOUBLE: IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  BOOL: IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
  DATETIME: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  KEYWORD_LIST: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};

/** The indexed value type of each of `keys`, as the operator service takes them. */
export function indexedValueTypes(
  keys: readonly { name: string; type: string }[] = MOCKWORLD_SEARCH_ATTRIBUTES,
): Record<string, IndexedValueType> {
  const searchAttributes: Record<string, IndexedValueType> = {};
  for (const key of keys) {
    const type = PROTO_TYPE[key.type.toUpperCase()];
    if (type === undefined)
      throw new Error(`No indexed value type for search attribute ${key.name} (${key.type})`);
    searchAttributes[key.name] = type;
  }
  return searchAttributes;
}

/**
 * Registers the search attributes mockworld's workflows set, on any Temporal server (dev server or
 * cluster). Idempotent: attributes that already exist are left alone. Returns the names added.
 */
export async function registerSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = MOCKWORLD_SEARCH_ATTRIBUTES.filter((key) => !known.has(key.name));
  if (missing.length === 0) return [];
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: indexedValueTypes(missing),
  });
  return missing.map((key) => key.name);
}
