import type { Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { pascalCaseOf } from '../schemas/enum-names.js';
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

/** The operator API of a client or worker connection. */
export type OperatorConnection = Pick<Connection, 'operatorService'>;

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
export async function registerSearchAttributes(
  connection: OperatorConnection,
  namespace: string,
): Promise<string[]> {
  const missing = await missingSearchAttributes(connection, namespace);
  if (missing.length === 0) return [];
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: indexedValueTypes(MOCKWORLD_SEARCH_ATTRIBUTES.filter((a) => missing.includes(a.name))),
  });
  return missing;
}

// What a worker needs of its namespace before it polls: without these attributes every workflow
// task of a run fails (`BadSearchAttributes`) and retries forever, which only the worker's log
// would show; so the plugin registers them at start, or, told not to, refuses to start with the
// exact commands that add them.

/** `register`: add the missing attributes (the default); `check`: refuse to start without them. */
export type SearchAttributeSetup = 'register' | 'check';

/** Thrown at worker start when the namespace lacks attributes the worker may not or cannot add. */
export class MissingSearchAttributesError extends Error {
  override readonly name = 'MissingSearchAttributesError';
  constructor(
    readonly namespace: string,
    readonly missing: readonly string[],
    cause?: unknown,
  ) {
    const commands = MOCKWORLD_SEARCH_ATTRIBUTES.filter((a) => missing.includes(a.name)).map(
      (a) =>
        `  temporal operator search-attribute create --namespace ${namespace} --name ${a.name} --type ${pascalCaseOf(a.type)}`,
    );
    super(
      `namespace ${namespace} lacks mockworld's search attributes ${missing.join(', ')}: every run's ` +
        `workflow task would fail on them. ${cause ? `Registering them failed (${errorText(cause)}). ` : ''}` +
        `Add them (Temporal Cloud: in the namespace's settings or with tcld) and start the worker again:\n` +
        commands.join('\n'),
      { cause },
    );
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Names of mockworld's attributes that `namespace` does not have. */
export async function missingSearchAttributes(
  connection: OperatorConnection,
  namespace: string,
): Promise<string[]> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set(Object.keys(existing.customAttributes ?? {}));
  return MOCKWORLD_SEARCH_ATTRIBUTES.map((a) => a.name).filter((name) => !known.has(name));
}

/**
 * Makes sure `namespace` has mockworld's search attributes: registers the missing ones
 * (`register`) or throws {@link MissingSearchAttributesError} naming them (`check`, or when the
 * server refuses to register them). Returns the names it added.
 */
export async function ensureSearchAttributes(
  connection: OperatorConnection,
  namespace: string,
  setup: SearchAttributeSetup,
): Promise<string[]> {
  const missing = await missingSearchAttributes(connection, namespace);
  if (missing.length === 0) return [];
  if (setup === 'check') throw new MissingSearchAttributesError(namespace, missing);
  try {
    return await registerSearchAttributes(connection, namespace);
  } catch (error) {
    throw new MissingSearchAttributesError(namespace, missing, error);
  }
}
