import { z } from 'zod';

/**
 * The layouts `mockworld export --format` writes (docs/synthesis.md "Export formats"):
 * `jsonl` tasks.jsonl + verl.jsonl; `verl-parquet` verl.parquet in verl's RL layout;
 * `hf` a Hugging Face datasets folder (Parquet shards + dataset card); `sft` sft.jsonl, the kept
 * demonstrations as chats with tool calls.
 */
export const ExportFormatSchema = z.enum(['jsonl', 'verl-parquet', 'hf', 'sft']);
export type ExportFormat = z.infer<typeof ExportFormatSchema>;

/** A `--format` value: formats separated by commas, `all` for every one; duplicates collapse. */
export const ExportFormatListSchema = z
  .string()
  .transform((text) =>
    text
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean),
  )
  .pipe(z.array(z.union([ExportFormatSchema, z.literal('all')])).min(1, 'name at least one format'))
  .transform((list): ExportFormat[] =>
    list.includes('all') ? [...ExportFormatSchema.options] : [...new Set(list as ExportFormat[])],
  );
