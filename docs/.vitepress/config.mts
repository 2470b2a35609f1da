/**
 * The documentation site: `npm run docs:build` writes the API reference with TypeDoc (typedoc.json:
 * the package's exports, into docs/api/) and the site to docs/.vitepress/dist; `npm run docs:dev`
 * serves it with live reload. The build fails on a link to a page that does not exist; links that
 * leave docs/ for the repository's files are checked by test/unit/file-references.test.ts instead.
 */
import { existsSync, readFileSync } from 'node:fs';
import { defineConfig } from 'vitepress';

/** The API reference TypeDoc writes into docs/api (`npm run docs:build` runs it first). */
const apiSidebarFile = new URL('../api/typedoc-sidebar.json', import.meta.url);
const api = existsSync(apiSidebarFile) ? JSON.parse(readFileSync(apiSidebarFile, 'utf8')) : [];

const guide = [
  { text: 'The demo', link: '/demo' },
  { text: 'The CLI', link: '/cli' },
  { text: 'The Temporal UI', link: '/temporal-ui' },
  { text: 'The viewer', link: '/viewer' },
  { text: 'Specs', link: '/specs' },
  { text: 'In your own worker', link: '/own-worker' },
  { text: 'Configuration', link: '/configuration' },
  { text: 'Spec reference', link: '/spec-reference' },
];
const pipelines = [
  { text: 'Synthesis', link: '/synthesis' },
  { text: 'Batch mode', link: '/batch-mode' },
  { text: 'GRPO training', link: '/grpo' },
  { text: 'Reasoning tasks', link: '/reasoning' },
  { text: 'Rule-checked rubrics', link: '/rubric-rules' },
  { text: 'SFT and the judge audit', link: '/sft-and-judge-audit' },
  { text: 'Scaling studies', link: '/scaling-studies' },
  { text: 'Evaluation', link: '/evaluation' },
  { text: 'Adding a benchmark', link: '/adding-a-benchmark' },
  { text: 'The paper preset', link: '/paper-preset' },
  { text: 'Train with verl', link: '/verl' },
  { text: 'OpenEnv and TRL', link: '/openenv' },
];
const operations = [
  { text: 'On a cluster', link: '/cluster' },
  { text: 'Payload encryption', link: '/encryption' },
  { text: 'Metrics and traces', link: '/observability' },
  { text: 'Bounds and retries', link: '/bounds-and-retries' },
  { text: 'Scale and host failures', link: '/scale' },
];
const results = [
  { text: 'Does it learn?', link: '/does-it-learn' },
  { text: 'Benchmarks', link: '/benchmarks' },
  { text: 'Layout', link: '/layout' },
];

export default defineConfig({
  title: 'mockworld',
  description: 'Durable agentic task synthesis, GRPO training and evaluation on Temporal',
  srcExclude: ['README.md'],
  // Links out of docs/ name the repository's files (../bench/learning.ts), not pages; the local
  // stack's addresses (http://localhost:8233) are for the reader's machine.
  ignoreDeadLinks: [/^(\.\/)?\.\.\//, /^https?:\/\/localhost\b/],
  themeConfig: {
    search: { provider: 'local' },
    sidebar: [
      { text: 'Using it', items: guide },
      { text: 'Pipelines', items: pipelines },
      { text: 'Operating it', items: operations },
      { text: 'Results', items: results },
      ...(api.length ? [{ text: 'API reference', link: '/api/', items: api }] : []),
    ],
  },
});
