import { stringify } from 'yaml';
import { ParquetLayoutError } from './errors.js';
import type { ParquetLayout } from './parquet.js';

type SchemaElement = ParquetLayout['schema'][number];

/** A column of the card's schema table: name, type as Hugging Face `datasets` names it, meaning. */
export const HF_COLUMN_MEANINGS: Record<string, string> = {
  task_id: "the task's id (`<run id>/task-<n>`)",
  persona_id: 'the persona the task was synthesized from',
  prompt: "what the agent sees: the run's system prompt, then the underspecified instruction",
  tools: "the task's tools and `ask_user` (OpenAI function tools, JSON)",
  hidden_context: 'what only the simulated user knows and reveals when asked',
  rubric: 'forbidden behaviours, sub-goals, required user interactions (the reward)',
  workflow: 'the high-level workflow the tools were built for',
  demonstrations: "the teacher's kept demonstrations (OpenAI messages with tool calls, JSON)",
  provenance: 'models, template versions and tokens by role of this task (JSON)',
};

/** The `datasets` feature of the column starting at `schema[at]`, and the index after it. */
function feature(schema: SchemaElement[], at: number): [Record<string, unknown>, number] {
  const element = schema[at]!;
  const name = element.name;
  if (element.converted_type === 'LIST') {
    const item = schema[at + 2]!; // LIST > repeated `list` > element
    if (item.num_children) {
      const [fields, next] = children(schema, at + 3, item.num_children);
      return [{ name, list: fields }, next];
    }
    return [{ name, list: dtypeOf(item) }, at + 3];
  }
  if (element.num_children) {
    const [fields, next] = children(schema, at + 1, element.num_children);
    return [{ name, struct: fields }, next];
  }
  return [{ name, dtype: dtypeOf(element) }, at + 1];
}

function children(schema: SchemaElement[], at: number, count: number): [Record<string, unknown>[], number] {
  const out: Record<string, unknown>[] = [];
  let next = at;
  for (let i = 0; i < count; i++) {
    const [child, after] = feature(schema, next);
    out.push(child);
    next = after;
  }
  return [out, next];
}

function dtypeOf(element: SchemaElement): string {
  if (element.type === 'INT64') return 'int64';
  if (element.type === 'BYTE_ARRAY' && element.converted_type === 'UTF8') return 'string';
  const converted = element.converted_type ? ` ${element.converted_type}` : '';
  throw new ParquetLayoutError(element.name, `${element.type ?? 'no physical type'}${converted}`);
}

/** The `datasets` features of a layout, in the card's YAML form. */
export function featuresOf(layout: ParquetLayout): Record<string, unknown>[] {
  return children(layout.schema, 1, layout.schema[0]!.num_children!)[0];
}

/** What the card says about the run the data came from. */
export interface CardProvenance {
  readonly runId: string;
  readonly kind: string;
  readonly status: string;
  /** The run's spec as validated at its start (models, counts, filters, templates). */
  readonly spec: Record<string, unknown>;
  /** The run's summary (kept, rejected by reason, tokens), when it finished. */
  readonly summary: Record<string, unknown> | null;
  /** Models by role as the tasks resolved them (endpoint defaults applied). */
  readonly models: Record<string, { model?: string; baseUrl?: string }>;
  readonly rows: number;
  readonly shards: readonly string[];
}

const sizeCategory = (n: number) =>
  n < 1_000
    ? 'n<1K'
    : n < 10_000
      ? '1K<n<10K'
      : n < 100_000
        ? '10K<n<100K'
        : n < 1_000_000
          ? '100K<n<1M'
          : 'n>1M';

/**
 * The dataset card (`README.md`) of the Hugging Face layout: YAML metadata `datasets` and the Hub
 * read (the data files of the `train` split, the features, the row count), then the schema and
 * where the data came from: spec, models, counts and the filters that kept these tasks.
 */
export function renderDatasetCard(layout: ParquetLayout, provenance: CardProvenance): string {
  const metadata = {
    pretty_name: `mockworld ${provenance.runId}`,
    tags: ['mockworld', 'synthetic', 'agentic', 'tool-use', 'rubric-reward'],
    task_categories: ['text-generation'],
    size_categories: [sizeCategory(provenance.rows)],
    configs: [{ config_name: 'default', data_files: [{ split: 'train', path: 'data/train-*.parquet' }] }],
    dataset_info: {
      features: featuresOf(layout),
      splits: [{ name: 'train', num_examples: provenance.rows }],
    },
  };
  const spec = provenance.spec;
  const filters = {
    coverageThreshold: spec.coverageThreshold,
    demonstrationsPerTask: spec.demonstrationsPerTask,
    maxTurns: spec.maxTurns,
    refine: spec.refine,
  };
  const counts = provenance.summary
    ? Object.fromEntries(
        ['tasks', 'kept', 'rejected', 'failed', 'rejectedByReason'].flatMap((key) =>
          key in provenance.summary! ? [[key, provenance.summary![key]]] : [],
        ),
      )
    : { kept: provenance.rows };
  const rows = featuresOf(layout).map(
    (f) => `| \`${f.name}\` | ${typeOfFeature(f)} | ${HF_COLUMN_MEANINGS[String(f.name)] ?? ''} |`,
  );
  const models = Object.entries(provenance.models).map(
    ([role, m]) => `| ${role} | \`${m.model ?? '?'}\` | ${m.baseUrl ?? ''} |`,
  );
  return [
    `---\n${stringify(metadata)}---`,
    '',
    `# mockworld ${provenance.runId}`,
    '',
    `${provenance.rows} agentic tool-use tasks synthesized by mockworld ` +
      `(a ${provenance.kind} run, ${provenance.status}): each an underspecified instruction, the task's own ` +
      'tools, the context only the simulated user knows, a rubric reward and the kept teacher demonstrations.',
    '',
    '```python',
    'from datasets import load_dataset',
    'tasks = load_dataset("parquet", data_files="data/train-*.parquet", split="train")  # or load_dataset("<this folder>")',
    '```',
    '',
    '## Schema',
    '',
    '| column | type | meaning |',
    '|---|---|---|',
    ...rows,
    '',
    'JSON columns are strings (`json.loads`): their shape differs from task to task.',
    '',
    '## Provenance',
    '',
    `- run: \`${provenance.runId}\` (${provenance.kind}, ${provenance.status})`,
    `- shards: ${provenance.shards.map((s) => `\`${s}\``).join(', ')}`,
    '',
    '### Models',
    '',
    '| role | model | endpoint |',
    '|---|---|---|',
    ...(models.length ? models : ['| (none recorded) | | |']),
    '',
    '### Counts',
    '',
    '```json',
    JSON.stringify(counts, null, 2),
    '```',
    '',
    '### Filters',
    '',
    '```json',
    JSON.stringify(filters, null, 2),
    '```',
    '',
    '### Spec',
    '',
    '```json',
    JSON.stringify(spec, null, 2),
    '```',
    '',
  ].join('\n');
}

function typeOfFeature(f: Record<string, unknown>): string {
  if (typeof f.dtype === 'string') return f.dtype;
  if (typeof f.list === 'string') return `list<${f.list}>`;
  if (Array.isArray(f.list))
    return `list<{${(f.list as Record<string, unknown>[]).map((c) => `${c.name}: ${typeOfFeature(c)}`).join(', ')}}>`;
  if (Array.isArray(f.struct))
    return `{${(f.struct as Record<string, unknown>[]).map((c) => `${c.name}: ${typeOfFeature(c)}`).join(', ')}}`;
  return '?';
}
