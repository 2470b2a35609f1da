// Copies the non-TypeScript files the compiled code reads next to itself (SQL migrations, prompt
// templates) into dist/, after `tsc -p tsconfig.build.json`.
import { cpSync } from 'node:fs';

for (const folder of ['activities/store/migrations', 'activities/templates/v1']) {
  cpSync(folder, `dist/${folder}`, { recursive: true });
}
