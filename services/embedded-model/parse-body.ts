import type { z } from 'zod';
import { badRequest } from './errors.js';

/** Parses a request body; every invalid path is named in one 400 error. */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues;
  const message = issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ');
  throw badRequest(`Invalid request: ${message}`, issues[0]?.path.join('.') || null);
}
