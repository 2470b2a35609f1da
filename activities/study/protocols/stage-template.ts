/**
 * The study's prompt templates are loaded (and hashed, for overrides) by the caller with
 * `loadTemplate` from `activities/templates/templates`; the protocol functions only fill them, so
 * they stay pure. This guard stops a template of another stage from being filled by mistake.
 */
import type { Template, TemplateChoice, TemplateStage } from '../../templates/templates.js';
import { ProtocolInputError } from '../errors.js';

/** A chat message of the study's prompts (assignable to the model client's message type). */
export interface PromptMessage {
  readonly role: 'system' | 'user';
  readonly content: string;
}

/** The shipped templates, used by the async helpers when the caller passes no choice. */
export { SHIPPED_TEMPLATES } from '../../templates/templates.js';

/** Throws {@link ProtocolInputError} unless `template` was loaded for `stage`. */
export function requireStage(template: Template, stage: TemplateStage, operation: string): void {
  if (template.stage !== stage) {
    throw new ProtocolInputError(
      operation,
      `needs the ${stage} template, got ${template.id} (${template.stage})`,
    );
  }
}
