/** The id of task `idx` of a synthesis run or an imported dataset: `<run>-task-00007`. */
export function taskIdOf(runId: string, idx: number): string {
  return `${runId}-task-${String(idx).padStart(5, '0')}`;
}
