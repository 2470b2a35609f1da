/**
 * Writes the Python workers' contracts as JSON Schema files under schemas/json/ (run after changing
 * a schemas/trainer-*.ts file or schemas/evaluation-contract.ts, and commit the output with the
 * change):
 *
 *   npx tsx schemas/emit-json-schema.ts
 *
 * schemas/json/trainer/ holds the trainer's contract (trainer-json-schema.ts), schemas/json/eval/
 * the evaluation worker's (eval-json-schema.ts). Files that a contract no longer emits are removed,
 * so each folder holds exactly its contract.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { evalJsonSchemaFiles } from './eval-json-schema.js';
import { JSON_SCHEMA_DIR, trainerJsonSchemaFiles } from './trainer-json-schema.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(root, JSON_SCHEMA_DIR);
const folders: Record<string, Record<string, string>> = {
  trainer: trainerJsonSchemaFiles(),
  eval: evalJsonSchemaFiles(),
};

for (const [folder, files] of Object.entries(folders)) {
  mkdirSync(path.join(dir, folder), { recursive: true });
  for (const name of readdirSync(path.join(dir, folder))) {
    if (!(`${folder}/${name}` in files)) rmSync(path.join(dir, folder, name));
  }
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  console.log(`wrote ${Object.keys(files).length} files under ${JSON_SCHEMA_DIR}/${folder}/`);
}
