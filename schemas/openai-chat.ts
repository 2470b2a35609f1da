/**
 * The subset of the OpenAI HTTP API the embedded model server (services/embedded-model) accepts,
 * validated at its boundary. Unknown request fields are ignored, as OpenAI-compatible servers
 * commonly do; fields whose meaning the server cannot honour (streaming, logprobs, images) are
 * refused, and the server answers a refusal with a 400.
 */
import { z } from 'zod';

const TextPartSchema = z.object({ type: z.literal('text'), text: z.string() });

/** Message content: a string, or text parts (images and audio are not supported). */
const ContentSchema = z.union([z.string(), z.array(TextPartSchema)]);

const ToolCallSchema = z.object({
  id: z.string(),
  type: z.literal('function').default('function'),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
});

/** One chat message in any of the OpenAI roles. */
export const ChatMessageSchema = z.discriminatedUnion('role', [
  z.object({ role: z.enum(['system', 'developer']), content: ContentSchema, name: z.string().optional() }),
  z.object({ role: z.literal('user'), content: ContentSchema, name: z.string().optional() }),
  z.object({
    role: z.literal('assistant'),
    content: ContentSchema.nullish(),
    tool_calls: z.array(ToolCallSchema).optional(),
    name: z.string().optional(),
  }),
  z.object({ role: z.literal('tool'), content: ContentSchema, tool_call_id: z.string() }),
]);

/** A validated chat message. */
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

/** A JSON Schema as sent by clients; only its shape as an object is checked here. */
const JsonSchemaObject = z.record(z.string(), z.unknown());

/** An OpenAI function tool. */
export const ToolSchema = z.object({
  type: z.literal('function'),
  function: z.object({
    name: z
      .string()
      .regex(/^[a-zA-Z0-9_.-]{1,64}$/, 'tool names are 1-64 characters of letters, digits, _ . -'),
    description: z.string().optional(),
    parameters: JsonSchemaObject.optional(),
    strict: z.boolean().nullish(),
  }),
});

/** A validated tool. */
export type Tool = z.infer<typeof ToolSchema>;

const ToolChoiceSchema = z.union([
  z.enum(['none', 'auto', 'required']),
  z.object({ type: z.literal('function'), function: z.object({ name: z.string() }) }),
]);

/** A validated `tool_choice`: `none`, `auto` (a tool call or text), `required` (any tool) or one named tool. */
export type ToolChoice = z.infer<typeof ToolChoiceSchema>;

const ResponseFormatSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    json_schema: z.object({
      name: z.string().optional(),
      description: z.string().optional(),
      schema: JsonSchemaObject.optional(),
      strict: z.boolean().nullish(),
    }),
  }),
]);

/** A validated `response_format`. */
export type ResponseFormat = z.infer<typeof ResponseFormatSchema>;

/** `POST /v1/chat/completions` body. */
export const ChatCompletionRequestSchema = z
  .object({
    model: z.string().optional(),
    messages: z.array(ChatMessageSchema).min(1, 'messages must contain at least one message'),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().gt(0).max(1).nullish(),
    max_tokens: z.number().int().min(1).nullish(),
    max_completion_tokens: z.number().int().min(1).nullish(),
    seed: z.number().int().nullish(),
    n: z.number().int().min(1).max(8).nullish(),
    stop: z.union([z.string(), z.array(z.string()).max(4)]).nullish(),
    presence_penalty: z.number().min(-2).max(2).nullish(),
    frequency_penalty: z.number().min(-2).max(2).nullish(),
    response_format: ResponseFormatSchema.nullish(),
    tools: z.array(ToolSchema).nullish(),
    tool_choice: ToolChoiceSchema.nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    stream: z
      .boolean()
      .nullish()
      .refine((s) => !s, 'streaming is not supported by the embedded model; send stream: false'),
    logprobs: z
      .boolean()
      .nullish()
      .refine((l) => !l, 'logprobs are not supported by the embedded model'),
  })
  .superRefine((body, ctx) => {
    const names = (body.tools ?? []).map((t) => t.function.name);
    const duplicate = names.find((name, i) => names.indexOf(name) !== i);
    if (duplicate)
      ctx.addIssue({ code: 'custom', path: ['tools'], message: `duplicate tool name '${duplicate}'` });
    const choice = body.tool_choice;
    if (choice && typeof choice === 'object' && !names.includes(choice.function.name)) {
      ctx.addIssue({
        code: 'custom',
        path: ['tool_choice', 'function', 'name'],
        message: `tool '${choice.function.name}' is not among tools [${names.join(', ')}]`,
      });
    }
    if ((choice === 'required' || typeof choice === 'object') && names.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['tool_choice'], message: 'tool_choice requires tools' });
    }
  });

/** A validated chat completion request. */
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequestSchema>;

/** `POST /v1/embeddings` body. */
export const EmbeddingRequestSchema = z.object({
  model: z.string().optional(),
  input: z.union([
    z.string(),
    z.array(z.string()).min(1).max(2048),
    z.array(z.number().int().min(0)).min(1),
    z
      .array(z.array(z.number().int().min(0)).min(1))
      .min(1)
      .max(2048),
  ]),
  encoding_format: z.enum(['float', 'base64']).nullish(),
  dimensions: z.number().int().min(1).nullish(),
});

/** A validated embeddings request. */
export type EmbeddingRequest = z.infer<typeof EmbeddingRequestSchema>;
