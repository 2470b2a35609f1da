import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TemplateFileError, TemplateValueError } from './errors.js';
import { resolveDataFile } from '../data-files.js';

const SHIPPED_DIR = path.dirname(fileURLToPath(import.meta.url));

/** The prompt templates of the pipelines, one file per stage. */
export type TemplateStage =
  | 'toolset'
  | 'refine'
  | 'instruction'
  | 'agent'
  | 'toolSimulator'
  | 'userSimulator'
  | 'rubric'
  | 'coverage'
  | 'judge'
  // The synthetic-data scaling study.
  | 'studyTeacher'
  | 'studyJudge'
  | 'evolInstruct'
  | 'traceRepair'
  // Reasoning problems as a synthesis source (seed §3.4).
  | 'reasoningRewrite'
  | 'reasoningSolve'
  | 'reasoningSolveSystem';

/** Which template files a run uses: a shipped version, and per-stage replacement files. */
export interface TemplateChoice {
  readonly version: string;
  readonly overrides: Partial<Record<TemplateStage, string>>;
}

/** The shipped v1 templates with no override: what a run uses when its spec chooses none. */
export const SHIPPED_TEMPLATES: TemplateChoice = { version: 'v1', overrides: {} };

/**
 * A loaded template: its text and an id for provenance that names the text by its hash
 * (`v1/toolset@<sha256 prefix>`, or `file@<sha256 prefix>` for a replacement file), so a template
 * edited in place is a new id and nothing stored under the old text is taken for the new.
 */
export interface Template {
  readonly stage: TemplateStage;
  readonly id: string;
  readonly text: string;
}

const cache = new Map<string, Promise<Template>>();

/** `<source>@<first 16 hex of the text's sha256>`. */
export function templateId(source: string, text: string): string {
  return `${source}@${createHash('sha256').update(text).digest('hex').slice(0, 16)}`;
}

/** Loads the template of `stage` (an override file if the spec names one), cached per process. */
export function loadTemplate(stage: TemplateStage, choice: TemplateChoice): Promise<Template> {
  const override = choice.overrides[stage];
  let file: string;
  try {
    file = override
      ? resolveDataFile(override, `${stage} template`)
      : path.join(SHIPPED_DIR, choice.version, `${stage}.md`);
  } catch (error) {
    return Promise.reject(error); // callers see every failure as a rejection
  }
  let loaded = cache.get(file);
  if (!loaded) {
    loaded = readFile(file, 'utf8').then(
      (text) => ({
        stage,
        text,
        id: templateId(override ? 'file' : `${choice.version}/${stage}`, text),
      }),
      (error: Error) => {
        cache.delete(file);
        throw new TemplateFileError(stage, file, error.message);
      },
    );
    cache.set(file, loaded);
  }
  return loaded;
}

/**
 * Fills `{{name}}` placeholders. A placeholder without a value is an error, so a template and
 * its caller cannot drift apart silently. Values that are not strings are written as JSON.
 */
export function renderTemplate(template: Template, values: Record<string, unknown>): string {
  return template.text.replace(/\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g, (_, name: string) => {
    if (!(name in values)) throw new TemplateValueError(template.id, name);
    const value = values[name];
    return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  });
}
