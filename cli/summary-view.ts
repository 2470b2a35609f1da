import { renderTable } from './table.js';

type Scalar = string | number | boolean | null;

const isScalar = (value: unknown): value is Scalar =>
  value === null || ['string', 'number', 'boolean'].includes(typeof value);

/**
 * Renders a run summary for people: scalar fields and small flat objects (counts, mean/min/max)
 * as one metric table, arrays of records (usage by role) as tables of their own.
 */
export function renderSummary(summary: Record<string, unknown>): string {
  const metrics: Record<string, unknown>[] = [];
  const tables: string[] = [];
  for (const [key, value] of Object.entries(summary)) {
    if (isScalar(value)) metrics.push({ metric: key, value });
    else if (Array.isArray(value) && value.every((row) => typeof row === 'object' && row !== null)) {
      tables.push(`${key}\n${renderTable(value as Record<string, unknown>[])}`);
    } else if (typeof value === 'object' && value !== null && Object.values(value).every(isScalar)) {
      const entries = Object.entries(value);
      metrics.push({
        metric: key,
        value: entries.length ? entries.map(([k, v]) => `${k} ${v}`).join(', ') : '-',
      });
    } else metrics.push({ metric: key, value: JSON.stringify(value) });
  }
  return [renderTable(metrics, ['metric', 'value']), ...tables].join('\n\n');
}
