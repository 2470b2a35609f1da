import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Root of the mockworld checkout (where package.json lives). */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Project-local Python venv that holds the pinned Temporal CLI (and nothing else). */
export const TOOLS_VENV = path.join(REPO_ROOT, '.venv');
