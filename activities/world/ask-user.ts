import type { FunctionTool } from '../../schemas/function-tool.js';

/** Name of the built-in tool through which the agent talks to the simulated user. */
export const ASK_USER_TOOL_NAME = 'ask_user';

/**
 * The built-in `ask_user({question})` tool, offered beside the task's tools. The instruction I
 * leaves out details only the user knows (seed eq. 3); this is how the agent recovers them.
 */
export const ASK_USER_TOOL: FunctionTool = {
  type: 'function',
  function: {
    name: ASK_USER_TOOL_NAME,
    description:
      'Ask the user who gave you the task a question and wait for the answer. Use it for details ' +
      'only the user knows (their preferences, identifiers, constraints, what they observed) and to ' +
      'confirm before acting on their behalf.',
    parameters: {
      type: 'object',
      properties: {
        question: { type: 'string', minLength: 1, description: 'One clear question for the user.' },
      },
      required: ['question'],
      additionalProperties: false,
    },
  },
};
