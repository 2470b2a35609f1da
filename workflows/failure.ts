import { ApplicationFailure } from '@temporalio/workflow';

/** Characters of an error message kept on a task's or problem's row. */
export const MAX_FAILURE_CHARS = 2_000;

/** The innermost cause (an activity's error) with its failure type: the error's class name. */
export function innermostFailure(error: unknown): { type: string; message: string } {
  let current = error;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  if (current instanceof ApplicationFailure)
    return { type: current.type ?? 'Error', message: current.message };
  if (current instanceof Error) return { type: current.name, message: current.message };
  return { type: 'Error', message: String(current) };
}
