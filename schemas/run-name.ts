import { z } from 'zod';

/** The characters a run's name may hold (it becomes part of the default workflow id, client/runs.ts). */
const RUN_NAME_PATTERN = /^[A-Za-z0-9_.-]+$/;

/**
 * The `name` field of a run spec (Synthesis, GrpoTraining, SftTraining, ScalingStudy): 1 to
 * `maxLength` characters of letters, digits, `_`, `.` and `-`, `defaultName` when unset.
 */
export function runNameField(defaultName: string, maxLength = 80) {
  return z
    .string()
    .min(1)
    .max(maxLength)
    .regex(RUN_NAME_PATTERN, 'letters, digits, _ . - only')
    .default(defaultName);
}
