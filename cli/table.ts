/** Renders rows as an aligned plain-text table (the CLI's default output; `--json` skips it). */
export function renderTable(rows: readonly Record<string, unknown>[], columns?: readonly string[]): string {
  if (rows.length === 0) return '(none)';
  const cols = columns ?? [...new Set(rows.flatMap((row) => Object.keys(row)))];
  const cell = (value: unknown) =>
    value === undefined || value === null
      ? ''
      : typeof value === 'object'
        ? JSON.stringify(value)
        : String(value);
  const widths = cols.map((col) => Math.max(col.length, ...rows.map((row) => cell(row[col]).length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [
    line([...cols]),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map((row) => line(cols.map((c) => cell(row[c])))),
  ].join('\n');
}

/** Renders one record as a two-column key/value table. */
export function renderRecord(record: Record<string, unknown>): string {
  return renderTable(
    Object.entries(record).map(([field, value]) => ({ field, value })),
    ['field', 'value'],
  );
}
