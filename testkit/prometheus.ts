/**
 * Reading a Prometheus text exposition in tests: the value of one series, picked by its name and
 * some of its labels (in any order), summed over the label sets that match.
 */
export function sampleValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const set = match[2] ?? '';
    if (Object.entries(labels).every(([key, value]) => set.includes(`${key}="${value}"`)))
      total += Number(match[3]);
  }
  return total;
}

/** The text at http://<address>/metrics. */
export async function scrape(address: string): Promise<string> {
  const response = await fetch(`http://${address}/metrics`);
  if (!response.ok) throw new Error(`GET http://${address}/metrics: ${response.status}`);
  return response.text();
}
