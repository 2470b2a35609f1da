/**
 * Translates a client's JSON Schema (OpenAI `response_format` / tool `parameters`, zod's
 * `z.toJSONSchema` output) into the subset node-llama-cpp compiles to a GBNF grammar, plus GBNF
 * terminals of our own for what that subset lacks: a string's `pattern` (regex-grammar.ts) and
 * integer bounds (a small range as an enum, a non-negative or positive integer as digits).
 *
 * Every JSON the grammar admits is valid for the translated keywords; keywords the grammar cannot
 * express are dropped, so the output may still break them (the caller validates after decoding):
 * number bounds other than the integer ones above, `multipleOf`, patterns outside the regex
 * subset, formats other than date, time and date-time, `not`, `uniqueItems`, conditionals.
 * llama.cpp refuses repetitions of more than {@link MAX_GRAMMAR_REPETITION}: a larger `maxLength`
 * or `maxItems` is lowered to it (the grammar then admits fewer values, all valid), a larger
 * minimum is dropped. Optional properties are always emitted (node-llama-cpp makes every listed
 * property required), which is valid for the schema. A sub-schema that says nothing the grammar
 * understands (`{}`, `true`) admits any JSON value, never only `null`.
 */
import type { GbnfJsonSchema } from 'node-llama-cpp';
import { JSON_STRING_CHAR_RULE, MAX_GRAMMAR_REPETITION, patternToGbnf } from './regex-grammar.js';

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
  /**
   * GBNF of our own, keyed by the placeholder string that stands for it in `schema` (a `const`):
   * {@link insertTerminals} replaces each placeholder in node-llama-cpp's grammar by its rule.
   */
  readonly terminals: Record<string, string>;
}

/** Name of the "one JSON string character" rule that terminals use. */
const CHAR_RULE = 'mw-string-char';
/** Placeholders: a `const` string no model output or schema contains. */
const PLACEHOLDER = /"\\"(__mw_terminal_[A-Za-z0-9_]+__)\\""/g;

/**
 * Translates one schema. `$defs`/`definitions` anywhere in it and `$ref: '#'` (zod's recursive
 * root) become entries of `defs`; use {@link withDefs} to attach them to the root that is compiled.
 */
export function toGbnfJsonSchema(schema: unknown, options: GbnfTranslationOptions = {}): GbnfTranslation {
  const prefix = options.defPrefix ?? '';
  const defs: Record<string, GbnfJsonSchema> = {};
  const terminals: Record<string, string> = {};
  const translator = new Translator(prefix, defs, terminals);
  const root = translator.translate(schema);
  if (translator.usesRoot) defs[`${prefix}__root`] = root;
  return { schema: root, defs, terminals };
}

/**
 * node-llama-cpp's GBNF for a translated schema with each terminal placeholder replaced by its
 * rule; the text is unchanged when there are none.
 */
export function insertTerminals(grammar: string, terminals: Record<string, string>): string {
  const names = Object.keys(terminals);
  if (names.length === 0) return grammar;
  const ruleOf = new Map(names.map((placeholder, i) => [placeholder, `mw-terminal-${i}`]));
  const replaced = grammar.replace(
    PLACEHOLDER,
    (whole, placeholder: string) => ruleOf.get(placeholder) ?? whole,
  );
  const rules = names.map((placeholder) => `${ruleOf.get(placeholder)} ::= ${terminals[placeholder]}`);
  return [replaced.trimEnd(), `${CHAR_RULE} ::= ${JSON_STRING_CHAR_RULE}`, ...rules, ''].join('\n');
}

/** What a grammar is compiled from: a schema node-llama-cpp reads, and our terminals in it. */
export interface GrammarSchema {
  readonly schema: GbnfJsonSchema;
  readonly terminals: Record<string, string>;
}

/** Translates a whole schema ready to compile: its definitions attached to its root. */
export function toGrammarSchema(schema: unknown): GrammarSchema {
  const translated = toGbnfJsonSchema(schema);
  return { schema: withDefs(translated.schema, translated.defs), terminals: translated.terminals };
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
    private readonly terminals: Record<string, string>,
  ) {}

  /** A schema that stands for `gbnf` until {@link insertTerminals} puts it in. */
  private terminal(gbnf: string): GbnfJsonSchema {
    const safePrefix = this.prefix.replace(/[^A-Za-z0-9_]/g, '_');
    const placeholder = `__mw_terminal_${safePrefix}${Object.keys(this.terminals).length}__`;
    this.terminals[placeholder] = gbnf;
    return { const: placeholder };
  }

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
      const simple = (t: string) => PRIMITIVES.has(t) && t !== 'string' && (t !== 'integer' || !hasBounds(s));
      if (types.length > 0 && types.every(simple)) {
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
        return this.string(s);
      case 'integer':
        return this.integer(s);
      case 'number':
      case 'boolean':
      case 'null':
        return { type: type as 'number' | 'boolean' | 'null' };
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
    // Extra properties are allowed by most schemas but never needed: emit only the listed ones. A
    // schema that lists none (a tool without parameters) gets `{}`, or a small model invents some;
    // an open map (additionalProperties a schema, or a least count of properties) stays open.
    const closed =
      names.length > 0 ||
      (isRecord(s.properties) && !isRecord(s.additionalProperties) && !((s.minProperties as number) > 0));
    if (closed) return { type: 'object', properties: translated, additionalProperties: false };
    const additional =
      s.additionalProperties === false
        ? false
        : isRecord(s.additionalProperties)
          ? this.translate(s.additionalProperties)
          : true;
    return {
      type: 'object',
      additionalProperties: additional,
      ...repetitionBounds(s.minProperties, s.maxProperties, 'minProperties', 'maxProperties'),
    } as GbnfJsonSchema;
  }

  private array(s: Json): GbnfJsonSchema {
    const tuple = Array.isArray(s.prefixItems) ? s.prefixItems : Array.isArray(s.items) ? s.items : undefined;
    const items = !Array.isArray(s.items) && s.items !== undefined && s.items !== true ? s.items : undefined;
    return {
      type: 'array',
      ...(tuple ? { prefixItems: tuple.map((t) => this.translate(t)) } : {}),
      ...(items !== undefined && items !== false ? { items: this.translate(items) } : {}),
      ...repetitionBounds(
        s.minItems,
        typeof s.maxItems === 'number' ? s.maxItems : tuple && items === false ? tuple.length : undefined,
        'minItems',
        'maxItems',
      ),
    } as GbnfJsonSchema;
  }

  private string(s: Json): GbnfJsonSchema {
    if (typeof s.format === 'string' && FORMATS.has(s.format)) {
      return { type: 'string', format: s.format as 'date-time' | 'time' | 'date' };
    }
    // A pattern decides more than the lengths do (a tool name's pattern holds its length too).
    const pattern = typeof s.pattern === 'string' ? patternToGbnf(s.pattern, CHAR_RULE) : undefined;
    if (pattern !== undefined) return this.terminal(pattern);
    return { type: 'string', ...repetitionBounds(s.minLength, s.maxLength, 'minLength', 'maxLength') };
  }

  /**
   * An integer with its bounds where the grammar can hold them: a range of at most
   * {@link MAX_ENUM_RANGE} values as an enum, a lower bound of 0 or 1 as digits without a sign.
   */
  private integer(s: Json): GbnfJsonSchema {
    const min = lowerBound(s);
    const max = upperBound(s);
    if (min !== undefined && max !== undefined && max >= min && max - min < MAX_ENUM_RANGE) {
      return { enum: Array.from({ length: max - min + 1 }, (_, i) => min + i) };
    }
    if (min === 0) return this.terminal(`"0" | [1-9] [0-9]{0,15}`);
    if (min === 1) return this.terminal(`[1-9] [0-9]{0,15}`);
    return { type: 'integer' };
  }
}

function hasBounds(s: Json): boolean {
  return ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'].some((k) => typeof s[k] === 'number');
}

/** Integer ranges up to this many values become enums. */
const MAX_ENUM_RANGE = 256;

function lowerBound(s: Json): number | undefined {
  if (typeof s.exclusiveMinimum === 'number') return Math.floor(s.exclusiveMinimum) + 1;
  return typeof s.minimum === 'number' ? Math.ceil(s.minimum) : undefined;
}

function upperBound(s: Json): number | undefined {
  if (typeof s.exclusiveMaximum === 'number') return Math.ceil(s.exclusiveMaximum) - 1;
  return typeof s.maximum === 'number' ? Math.floor(s.maximum) : undefined;
}

/**
 * Length or count bounds llama.cpp accepts: a maximum over {@link MAX_GRAMMAR_REPETITION} is
 * lowered to it (fewer values, all valid), a minimum over it is dropped (validation decides).
 */
function repetitionBounds<Min extends string, Max extends string>(
  min: unknown,
  max: unknown,
  minKey: Min,
  maxKey: Max,
): Partial<Record<Min | Max, number>> {
  const bounds: Partial<Record<Min | Max, number>> = {};
  const lower = typeof min === 'number' && min > 0 && min <= MAX_GRAMMAR_REPETITION ? min : undefined;
  if (lower !== undefined) bounds[minKey] = lower;
  if (typeof max === 'number' && max >= (lower ?? 0)) bounds[maxKey] = Math.min(max, MAX_GRAMMAR_REPETITION);
  return bounds;
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
