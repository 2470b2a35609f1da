/**
 * Writes the reference pages generated from the schemas (schemas/reference-docs.ts); run after
 * changing the environment or a spec schema, and commit the output with the change:
 *
 *   npx tsx schemas/emit-reference-docs.ts
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { configurationPage, specReference } from './reference-docs.js';

const docs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'docs');
const pages = { 'configuration.md': configurationPage(), 'spec-reference.md': specReference() };
for (const [name, text] of Object.entries(pages)) {
  writeFileSync(path.join(docs, name), text);
  console.log(`wrote docs/${name}`);
}
