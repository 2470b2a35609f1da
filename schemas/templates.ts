import { z } from 'zod';

/** Stages whose template file a run may replace (synthesis, the mock world, the rubric judge). */
export const TemplateOverrideStageSchema = z.enum([
  'toolset',
  'refine',
  'instruction',
  'agent',
  'toolSimulator',
  'userSimulator',
  'rubric',
  'coverage',
  'judge',
  'reasoningSolve',
  'reasoningSolveSystem',
]);

/**
 * Prompt templates: a shipped version, and per-stage files that replace the shipped ones. The one
 * shape of every spec's, episode's and service's `templates`; the loader (activities/templates)
 * takes its output, and a loaded template's id carries its text's hash, so an edit is a new id.
 */
export const TemplatesSchema = z
  .object({
    version: z.enum(['v1']).default('v1').describe('Shipped template set (activities/templates/<version>).'),
    overrides: z
      .partialRecord(TemplateOverrideStageSchema, z.string().min(1))
      .default({})
      .describe('Stage → path of a template file that replaces the shipped one (recorded by content hash).'),
  })
  .strict();
export type Templates = z.output<typeof TemplatesSchema>;

/** What a spec that chooses no templates gets: the shipped v1 set, nothing replaced. */
export const DEFAULT_TEMPLATES: Templates = { version: 'v1', overrides: {} };
