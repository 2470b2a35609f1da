/**
 * Writes the trainer contract's JSON Schema files under schemas/json/ (run after changing a
 * schemas/trainer-*.ts file, and commit the output with the change):
 *
 *   npx tsx schemas/emit-json-schema.ts
 *
 * Files that the contract no longer emits are removed, so the folder holds exactly the contract.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { JSON_SCHEMA_DIR, trainerJsonSchemaFiles } from './trainer-json-schema.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(root, JSON_SCHEMA_DIR);
const files = trainerJsonSchemaFiles();

mkdirSync(path.join(dir, 'trainer'), { recursive: true });
for (const name of readdirSync(path.join(dir, 'trainer'))) {
  if (!(`trainer/${name}` in files)) rmSync(path.join(dir, 'trainer', name));
}
for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
console.log(`wrote ${Object.keys(files).length} files under ${JSON_SCHEMA_DIR}/`);
