// Copies the non-TypeScript files the compiled code reads next to itself (SQL migrations, prompt
// templates, the sandbox's bootstrap.py, the math verifier) into dist/, after `tsc -p tsconfig.build.json`.
import { cpSync } from 'node:fs';

for (const folder of [
  'activities/store/migrations',
  'activities/templates/v1',
  'activities/sandbox/python',
  'activities/correctness/python',
]) {
  cpSync(folder, `dist/${folder}`, { recursive: true });
}
