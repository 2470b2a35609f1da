import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveDataFile } from '../data-files.js';
import { TemplateFileError } from '../templates/errors.js';
import { renderTemplate, SHIPPED_TEMPLATES, type TemplateChoice } from '../templates/templates.js';
import { ASK_USER_TOOL_NAME } from './ask-user.js';

/** Where the shipped template versions live (beside `templates.ts`). */
const SHIPPED_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'templates');

/** The shipped templates, when a caller names none. */

const prompts = new Map<string, string>();

/**
 * The agent's system prompt, rendered from the `agent` template of `templates` (the shipped v1
 * by default). Synchronous and cached per file, so a dataset exporter writing thousands of
 * prompts and the episode runner always agree on the exact text the policy is trained with. The
 * prompt names no task detail and no turn budget: the tools travel as function specs and I as
 * the first user message, so the same prompt serves every task.
 */
export function agentSystemPrompt(templates: TemplateChoice = SHIPPED_TEMPLATES): string {
  const override = templates.overrides['agent'];
  // Same resolution as loadTemplate, which is asynchronous and cannot serve a synchronous caller.
  const file = override
    ? resolveDataFile(override, 'agent template')
    : path.join(SHIPPED_DIR, templates.version, 'agent.md');
  let prompt = prompts.get(file);
  if (prompt === undefined) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new TemplateFileError('agent', file, (error as Error).message);
    }
    prompt = renderTemplate({ stage: 'agent', id: file, text }, { askUserTool: ASK_USER_TOOL_NAME });
    prompts.set(file, prompt);
  }
  return prompt;
}
