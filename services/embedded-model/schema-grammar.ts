/**
 * Compiles a translated JSON Schema (json-schema-grammar.ts) to a llama.cpp grammar: node-llama-cpp
 * writes the GBNF of the schema, our terminals (patterns, integer bounds) replace their
 * placeholders in it, and the result is compiled with the settings node-llama-cpp gives its own
 * JSON schema grammars (generation stops at the blank lines that follow the JSON).
 *
 * The JSON is written on one line: node-llama-cpp's default grammar lets the model put each value
 * on its own indented line, and the small embedded model does, spending a third of its tokens
 * (measured on the toolset stage) on newlines and indentation, which also leaves less of a
 * `max_tokens` budget for the answer to close in.
 */
import type { GbnfJsonSchema, Llama, LlamaGrammar } from 'node-llama-cpp';
import { loadLlamaCpp } from '../../deploy/embedded-model/llama-runtime.js';
import { insertTerminals, type GrammarSchema } from './json-schema-grammar.js';

type GbnfWriter = (schema: GbnfJsonSchema, options: { allowNewLines: boolean }) => string;

let writer: Promise<GbnfWriter> | undefined;

/**
 * node-llama-cpp's GBNF writer, which its public API only offers behind a compiled grammar and
 * with new lines allowed. Imported by file from the pinned version (3.21.1); the grammar tests
 * fail if a version moves or changes it.
 */
function gbnfWriter(): Promise<GbnfWriter> {
  writer ??= loadLlamaCpp()
    .then(
      ({ entryUrl }) => import(new URL('./utils/gbnfJson/getGbnfGrammarForGbnfJsonSchema.js', entryUrl).href),
    )
    .then(
      (module: { getGbnfGrammarForGbnfJsonSchema: GbnfWriter }) => module.getGbnfGrammarForGbnfJsonSchema,
    );
  return writer;
}

/** The GBNF text of `spec`, JSON on one line, terminals in place. */
export async function schemaGrammarText(spec: GrammarSchema): Promise<string> {
  const write = await gbnfWriter();
  return insertTerminals(write(spec.schema, { allowNewLines: false }), spec.terminals);
}

/** The grammar of `spec`; throws (from llama.cpp's parser) when it cannot be compiled. */
export async function createSchemaGrammar(llama: Llama, spec: GrammarSchema): Promise<LlamaGrammar> {
  return llama.createGrammar({
    grammar: await schemaGrammarText(spec),
    stopGenerationTriggers: [(await loadLlamaCpp()).module.LlamaText(['\n'.repeat(4)])],
    trimWhitespaceSuffix: true,
  });
}
