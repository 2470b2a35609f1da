/** A one-line progress display: a bar on a terminal, a line every few seconds otherwise (CI logs). */
export class ProgressLine {
  private lastPrinted = 0;
  private lastText = '';

  constructor(
    private readonly stream: NodeJS.WriteStream = process.stderr,
    private readonly intervalMs = 5_000,
  ) {}

  /** Shows `done/total` with a label; cheap to call often. */
  update(done: number, total: number, label: string): void {
    const fraction = total > 0 ? Math.min(1, done / total) : 0;
    const text = `${bar(fraction)} ${done}/${total} ${label}`;
    if (this.stream.isTTY) {
      this.stream.write(`\r${text.slice(0, (this.stream.columns ?? 100) - 1).padEnd(this.lastText.length)}`);
      this.lastText = text;
    } else if (text !== this.lastText && Date.now() - this.lastPrinted >= this.intervalMs) {
      // A log gets a line per change at most every intervalMs; a change inside the interval is
      // printed by a later call (lastText is what was printed, not what was seen).
      this.stream.write(`${text}\n`);
      this.lastPrinted = Date.now();
      this.lastText = text;
    }
  }

  /** Ends the line so later output starts clean. */
  finish(): void {
    if (this.stream.isTTY && this.lastText) this.stream.write('\n');
  }
}

function bar(fraction: number, width = 24): string {
  const filled = Math.round(fraction * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.round(fraction * 100)).padStart(3)}%`;
}
