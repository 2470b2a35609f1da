import { z } from 'zod';

/** An OpenAI function-calling tool spec (`tools[]` of a chat request). */
export const FunctionToolSchema = z
  .object({
    type: z.literal('function'),
    function: z
      .object({
        name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, _ or -'),
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

/** A task's own tool suite as stored in `tasks.tools`: at least one tool (the mock world adds `ask_user`). */
export const TaskToolsSchema = z.array(FunctionToolSchema).min(1);
