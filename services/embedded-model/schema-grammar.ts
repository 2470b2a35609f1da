/**
 * Compiles a translated JSON Schema (json-schema-grammar.ts) to a llama.cpp grammar: node-llama-cpp
 * writes the GBNF of the schema, our terminals (patterns, integer bounds) replace their
 * placeholders in it, and the result is compiled with the settings node-llama-cpp gives its own
 * JSON schema grammars (generation stops at the blank lines that follow the JSON).
 */
import { LlamaText, type GbnfJsonSchema, type Llama, type LlamaGrammar } from 'node-llama-cpp';
import { insertTerminals, type GrammarSchema } from './json-schema-grammar.js';

/** The grammar of `spec`; throws (from llama.cpp's parser) when it cannot be compiled. */
export async function createSchemaGrammar(llama: Llama, spec: GrammarSchema): Promise<LlamaGrammar> {
  const plain = await llama.createGrammarForJsonSchema<GbnfJsonSchema, Record<string, GbnfJsonSchema>>(
    spec.schema,
  );
  if (Object.keys(spec.terminals).length === 0) return plain;
  return llama.createGrammar({
    grammar: insertTerminals(plain.grammar, spec.terminals),
    stopGenerationTriggers: [LlamaText(['\n'.repeat(4)])],
    trimWhitespaceSuffix: true,
  });
}
