import { fileWriter, parquetWriteRows } from 'hyparquet-writer';

/**
 * Parquet through hyparquet-writer (pure JavaScript, one dependency, streams rows in groups):
 * the CLI and the CPU image write Parquet with no Python or native library. Each layout has an
 * explicit schema, so every file of a layout has the same columns and types whatever its rows.
 */

type SchemaElement = NonNullable<Parameters<typeof parquetWriteRows>[0]['schema']>[number];

const text = (name: string, optional = false): SchemaElement => ({
  name,
  type: 'BYTE_ARRAY',
  converted_type: 'UTF8',
  repetition_type: optional ? 'OPTIONAL' : 'REQUIRED',
});

/** A list (Parquet LIST, three-level) of `element` (one schema element, or a group's elements). */
const list = (name: string, element: SchemaElement[]): SchemaElement[] => [
  { name, repetition_type: 'REQUIRED', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  ...element,
];

const group = (name: string, children: SchemaElement[][]): SchemaElement[] => [
  { name, repetition_type: 'REQUIRED', num_children: children.length },
  ...children.flat(),
];

/** Chat messages: list<struct<role: string, content: string?>>. */
const messages = (name: string) =>
  list(name, [
    { name: 'element', repetition_type: 'REQUIRED', num_children: 2 },
    text('role'),
    text('content', true),
  ]);

const strings = (name: string) => list(name, [text('element')]);

/** A layout: its top-level column names and its schema (root first). */
export interface ParquetLayout {
  readonly columns: readonly string[];
  readonly schema: SchemaElement[];
}

function layout(columns: [string, SchemaElement[]][]): ParquetLayout {
  return {
    columns: columns.map(([name]) => name),
    schema: [{ name: 'root', num_children: columns.length }, ...columns.flatMap(([, elements]) => elements)],
  };
}

/** verl's RL layout (layouts.ts verlParquetRow). */
export const VERL_LAYOUT = layout([
  ['data_source', [text('data_source')]],
  ['prompt', messages('prompt')],
  ['ability', [text('ability')]],
  ['reward_model', group('reward_model', [[text('style')], [text('ground_truth')]])],
  [
    'extra_info',
    group('extra_info', [
      [{ name: 'index', type: 'INT64', repetition_type: 'REQUIRED' }],
      [text('split')],
      [text('run_id')],
      [text('task_id')],
      [text('tools')],
      [text('tools_kwargs')],
      [text('rubric')],
      [text('hidden_context')],
    ]),
  ],
  ['agent_name', [text('agent_name')]],
]);

/** The Hugging Face datasets layout of the tasks (layouts.ts hfRow). */
export const HF_LAYOUT = layout([
  ['task_id', [text('task_id')]],
  ['persona_id', [text('persona_id')]],
  ['prompt', messages('prompt')],
  ['tools', [text('tools')]],
  ['hidden_context', [text('hidden_context')]],
  ['rubric', group('rubric', [strings('forbidden'), strings('subGoals'), strings('requiredInteractions')])],
  ['workflow', strings('workflow')],
  ['demonstrations', [text('demonstrations')]],
  ['provenance', [text('provenance')]],
]);

/** Rows per row group: small enough for flat memory, large enough for good compression. */
const ROW_GROUP = 1_000;

/** Writes `rows` (pulled lazily) to `file` in `layout`; returns how many were written. */
export async function writeParquet(
  file: string,
  layout: ParquetLayout,
  rows: AsyncIterable<Record<string, unknown>>,
): Promise<number> {
  let count = 0;
  async function* counted() {
    for await (const row of rows) {
      count++;
      yield row;
    }
  }
  await parquetWriteRows({
    writer: fileWriter(file),
    rows: counted(),
    columns: layout.columns.map((name) => ({ name })),
    schema: layout.schema,
    rowGroupSize: ROW_GROUP,
    createdBy: 'mockworld',
  });
  return count;
}
