import { z } from 'zod';

/**
 * How a role's requests are gathered into provider batch jobs (the OpenAI Batch API: a JSONL file
 * of requests, answered within a completion window at a discount). A job is sent when
 * `maxRequests` requests wait or the oldest has waited `maxWaitSeconds`, whichever comes first.
 */
export const BatchWindowSchema = z
  .object({
    maxWaitSeconds: z
      .number()
      .min(0)
      .max(86_400)
      .default(60)
      .describe('Longest a request waits for others before its job is sent.'),
    maxRequests: z
      .number()
      .int()
      .min(1)
      .max(50_000)
      .default(1000)
      .describe("Requests per job; a job is sent as soon as this many wait (OpenAI's limit: 50,000)."),
    pollSeconds: z
      .number()
      .min(0.05)
      .max(3600)
      .default(30)
      .describe("How often a job's status and a waiting request's answer are looked up."),
    priceFactor: z
      .number()
      .gt(0)
      .max(1)
      .default(0.5)
      .describe("Batch price ÷ the endpoint's online prices (OpenAI's published batch discount: 0.5)."),
    maxSubmissions: z
      .number()
      .int()
      .min(1)
      .max(5)
      .default(2)
      .describe(
        'Jobs a request may be sent in: a request a job leaves unanswered (expired, failed line) is sent in the next job until this many, then online.',
      ),
    maxJobMinutes: z
      .number()
      .min(0.01)
      .max(1440)
      .default(1440)
      .describe(
        "A job still running after this long is cancelled (its answered lines are kept); the provider's window is 24 h.",
      ),
  })
  .strict();

/** Validated batch window. */
export type BatchWindow = z.infer<typeof BatchWindowSchema>;

/** Where a role's requests go: one at a time as they come, or gathered into batch jobs. */
export const CallModeSchema = z.enum(['online', 'batch']);
