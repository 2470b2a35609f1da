/**
 * Translates a client's JSON Schema (OpenAI `response_format` / tool `parameters`, zod's
 * `z.toJSONSchema` output) into the subset node-llama-cpp compiles to a GBNF grammar.
 *
 * Every JSON the grammar admits is valid for the translated keywords; keywords the grammar cannot
 * express are dropped, so the output may still break them: numeric bounds (`minimum`, `maximum`,
 * `multipleOf`), string `pattern` and formats other than date, time and date-time, `not`,
 * `uniqueItems`, conditionals. Optional properties are always emitted (node-llama-cpp makes every
 * listed property required), which is valid for the schema. A sub-schema that says nothing the
 * grammar understands (`{}`, `true`) admits any JSON value, never only `null`.
 */
import type { GbnfJsonSchema } from 'node-llama-cpp';

type Json = Record<string, unknown>;

/** Any JSON value, written with keywords node-llama-cpp compiles (its arrays and maps default to any JSON). */
export const ANY_JSON: GbnfJsonSchema = {
  oneOf: [
    { type: ['string', 'number', 'boolean', 'null'] },
    { type: 'array' },
    { type: 'object', additionalProperties: true },
  ],
};

const PRIMITIVES = new Set(['string', 'number', 'integer', 'boolean', 'null']);
const FORMATS = new Set(['date-time', 'time', 'date']);

/** Options of {@link toGbnfJsonSchema}. */
export interface GbnfTranslationOptions {
  /** Prefix for definition names, so that schemas translated together (tools) cannot collide. */
  readonly defPrefix?: string;
}

/** A translated schema and the definitions its `$ref`s point to (`#/$defs/<name>`). */
export interface GbnfTranslation {
  readonly schema: GbnfJsonSchema;
  readonly defs: Record<string, GbnfJsonSchema>;
}

/**
 * Translates one schema. `$defs`/`definitions` anywhere in it and `$ref: '#'` (zod's recursive
 * root) become entries of `defs`; use {@link withDefs} to attach them to the root that is compiled.
 */
export function toGbnfJsonSchema(schema: unknown, options: GbnfTranslationOptions = {}): GbnfTranslation {
  const prefix = options.defPrefix ?? '';
  const defs: Record<string, GbnfJsonSchema> = {};
  const translator = new Translator(prefix, defs);
  const root = translator.translate(schema);
  if (translator.usesRoot) defs[`${prefix}__root`] = root;
  return { schema: root, defs };
}

/** Attaches definitions to a root schema (node-llama-cpp reads `$defs` on `oneOf` schemas). */
export function withDefs(schema: GbnfJsonSchema, defs: Record<string, GbnfJsonSchema>): GbnfJsonSchema {
  if (Object.keys(defs).length === 0) return schema;
  return { oneOf: [schema], $defs: defs } as GbnfJsonSchema;
}

class Translator {
  usesRoot = false;
  private readonly seenDefs = new Set<unknown>();

  constructor(
    private readonly prefix: string,
    private readonly defs: Record<string, GbnfJsonSchema>,
  ) {}

  translate(input: unknown): GbnfJsonSchema {
    if (input === null || typeof input !== 'object' || Array.isArray(input)) return ANY_JSON;
    const s = input as Json;
    this.collectDefs(s.$defs);
    this.collectDefs(s.definitions);

    if (typeof s.$ref === 'string') return this.ref(s.$ref);
    if (s.nullable === true) {
      const { nullable: _nullable, ...rest } = s;
      return { oneOf: [this.translate(rest), { type: 'null' }] };
    }
    if ('const' in s) return isPrimitive(s.const) ? { const: s.const } : ANY_JSON;
    if (Array.isArray(s.enum)) {
      const values = s.enum.filter(isPrimitive);
      return values.length === s.enum.length && values.length > 0 ? { enum: values } : ANY_JSON;
    }
    const alternatives = Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : undefined;
    if (alternatives && alternatives.length > 0) return { oneOf: alternatives.map((a) => this.translate(a)) };
    if (Array.isArray(s.allOf) && s.allOf.length > 0) return this.translate(mergeAllOf(s));

    const type = s.type ?? inferType(s);
    if (Array.isArray(type)) {
      const types = type.filter((t): t is string => typeof t === 'string');
      if (types.length > 0 && types.every((t) => PRIMITIVES.has(t) && t !== 'string')) {
        return { type: types as ('number' | 'integer' | 'boolean' | 'null')[] };
      }
      return { oneOf: types.map((t) => this.translate({ ...s, type: t })) };
    }
    switch (type) {
      case 'object':
        return this.object(s);
      case 'array':
        return this.array(s);
      case 'string':
        return string(s);
      case 'number':
      case 'integer':
      case 'boolean':
      case 'null':
        return { type: type as 'number' | 'integer' | 'boolean' | 'null' };
      default:
        return ANY_JSON;
    }
  }

  private ref(ref: string): GbnfJsonSchema {
    if (ref === '#') {
      this.usesRoot = true;
      return { $ref: `#/$defs/${this.prefix}__root` } as GbnfJsonSchema;
    }
    const match = /^#\/(?:\$defs|definitions)\/(.+)$/.exec(ref);
    if (!match?.[1]) return ANY_JSON;
    return { $ref: `#/$defs/${this.prefix}${decodePointer(match[1])}` } as GbnfJsonSchema;
  }

  private collectDefs(defs: unknown): void {
    if (!defs || typeof defs !== 'object' || this.seenDefs.has(defs)) return;
    this.seenDefs.add(defs);
    for (const [name, def] of Object.entries(defs as Json)) {
      this.defs[`${this.prefix}${name}`] = ANY_JSON; // placeholder first: definitions may refer to themselves
      this.defs[`${this.prefix}${name}`] = this.translate(def);
    }
  }

  private object(s: Json): GbnfJsonSchema {
    const properties = isRecord(s.properties) ? s.properties : {};
    const names = Object.keys(properties);
    const translated = Object.fromEntries(names.map((name) => [name, this.translate(properties[name])]));
    if (names.length > 0) {
      // Extra properties are allowed by most schemas but never needed: emit only the listed ones.
      return { type: 'object', properties: translated, additionalProperties: false };
    }
    const additional =
      s.additionalProperties === false
        ? false
        : isRecord(s.additionalProperties)
          ? this.translate(s.additionalProperties)
          : true;
    return {
      type: 'object',
      additionalProperties: additional,
      ...(typeof s.minProperties === 'number' ? { minProperties: s.minProperties } : {}),
      ...(typeof s.maxProperties === 'number' ? { maxProperties: s.maxProperties } : {}),
    } as GbnfJsonSchema;
  }

  private array(s: Json): GbnfJsonSchema {
    const tuple = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : undefined;
    const items = !Array.isArray(s.items) && s.items !== undefined && s.items !== true ? s.items : undefined;
    return {
      type: 'array',
      ...(tuple ? { prefixItems: tuple.map((t) => this.translate(t)) } : {}),
      ...(items !== undefined && items !== false ? { items: this.translate(items) } : {}),
      ...(typeof s.minItems === 'number' ? { minItems: s.minItems } : {}),
      ...(typeof s.maxItems === 'number'
        ? { maxItems: s.maxItems }
        : tuple && items === false
          ? { maxItems: tuple.length }
          : {}),
    } as GbnfJsonSchema;
  }
}

function string(s: Json): GbnfJsonSchema {
  if (typeof s.format === 'string' && FORMATS.has(s.format)) {
    return { type: 'string', format: s.format as 'date-time' | 'time' | 'date' };
  }
  return {
    type: 'string',
    ...(typeof s.minLength === 'number' ? { minLength: s.minLength } : {}),
    ...(typeof s.maxLength === 'number' ? { maxLength: s.maxLength } : {}),
  };
}

/** A type implied by the keywords present, for schemas that omit `type`. */
function inferType(s: Json): string | undefined {
  if ('properties' in s || 'additionalProperties' in s) return 'object';
  if ('items' in s || 'prefixItems' in s) return 'array';
  if ('minLength' in s || 'maxLength' in s || 'format' in s) return 'string';
  return undefined;
}

/** Folds `allOf` members that are objects into one object schema; otherwise keeps the first member. */
function mergeAllOf(s: Json): Json {
  const { allOf, ...rest } = s as Json & { allOf: unknown[] };
  const members = [rest, ...allOf].filter(isRecord);
  const objects = members.filter((m) => m.type === 'object' || 'properties' in m);
  if (objects.length === 0) return { ...rest, ...(allOf.find(isRecord) ?? {}) };
  return {
    type: 'object',
    properties: Object.assign({}, ...objects.map((m) => (isRecord(m.properties) ? m.properties : {}))),
  };
}

function isRecord(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function isPrimitive(value: unknown): value is string | number | boolean | null {
  return value === null || ['string', 'number', 'boolean'].includes(typeof value);
}

function decodePointer(segment: string): string {
  return decodeURIComponent(segment).replace(/~1/g, '/').replace(/~0/g, '~');
}
