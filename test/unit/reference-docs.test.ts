import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../deploy/paths.js';
import { EnvironmentSchema } from '../../schemas/environment.js';
import { configurationPage, specReference } from '../../schemas/reference-docs.js';

const page = (name: string) => readFileSync(path.join(REPO_ROOT, 'docs', name), 'utf8');

describe('reference pages generated from the schemas', () => {
  it('docs/configuration.md and docs/spec-reference.md are what the schemas render (run schemas/emit-reference-docs.ts)', () => {
    expect(page('configuration.md')).toBe(configurationPage());
    expect(page('spec-reference.md')).toBe(specReference());
  });

  it('every environment variable has a row that says what it does', () => {
    for (const [name, schema] of Object.entries(EnvironmentSchema.shape)) {
      expect(schema.description, `${name} needs .describe(...)`).toBeTruthy();
      expect(configurationPage()).toContain(`| \`${name}\` |`);
    }
  });

  it('a spec field shows its type, its default and its description', () => {
    const reference = specReference();
    expect(reference).toMatch(/\| `name` \| string \| `"smoke"` \| Label shown in reports\. \|/);
    expect(reference).toMatch(
      /\| `model\.endpoint\.baseUrl` \| string \| required \| OpenAI-compatible base URL/,
    );
    expect(reference).toContain('## GrpoTraining');
  });
});
