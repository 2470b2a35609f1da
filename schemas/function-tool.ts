import { z } from 'zod';

/** Function names OpenAI accepts (also what the embedded model's grammar lets a teacher write). */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const TOOL_NAME_RULE = 'must be 1-64 letters, digits, _ or -';

/** An OpenAI function-calling tool spec (`tools[]` of a chat request). */
export const FunctionToolSchema = z
  .object({
    type: z.literal('function'),
    function: z
      .object({
        name: z.string().regex(TOOL_NAME_PATTERN, TOOL_NAME_RULE),
        description: z.string().min(1).max(2_000),
        parameters: z
          .object({
            type: z.literal('object'),
            properties: z.record(z.string(), z.record(z.string(), z.unknown())).default({}),
            required: z.array(z.string()).optional(),
          })
          .loose(),
      })
      .strict(),
  })
  .strict();

/** A validated function-calling tool. */
export type FunctionTool = z.infer<typeof FunctionToolSchema>;

/** A list of function-calling tools, possibly empty (e.g. a task's tools as read back for a trainer batch). */
export const FunctionToolsSchema = z.array(FunctionToolSchema);

/** A task's own tool suite as stored in `tasks.tools`: at least one tool (the mock world adds `ask_user`). */
export const TaskToolsSchema = FunctionToolsSchema.min(1);
