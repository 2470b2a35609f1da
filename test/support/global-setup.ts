/** Vitest global setup: nothing shared yet beyond PostgreSQL, which the machine already runs. */
export default async function setup(): Promise<void> {}
