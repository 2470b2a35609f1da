/**
 * The documented bounds (docs/bounds-and-retries.md, "Bounds"): the largest piece of each kind that mockworld stores
 * or sends, defined once. Model answers are checked against them before they are parsed or
 * stored (activities/llm/answer-bounds.ts); what happens above each bound is said beside it and in
 * the README table. Sizes are UTF-8 bytes unless the name says characters.
 */
export const BOUNDS = {
  /**
   * Any model answer as the ledger (`llm_calls`) keeps it: content plus tool-call arguments.
   * Above it the stored answer is cut and marked oversized; nothing downstream uses it. It is
   * also the largest structured answer parsed (teacher stages, rubric, judge, simulators).
   */
  answerBytes: 256 * 1024,
  /**
   * JSON nesting depth (arrays and objects) of a model answer or of tool-call arguments, checked
   * on the text before it is parsed: deeper values exhaust recursive code (copying, hashing,
   * JSON.stringify) and no tool or stage needs them.
   */
  answerDepth: 64,
  /** The agent-visible instruction I (characters, as the teacher's schema bounds it). */
  instructionChars: 2_000,
  /** The user-only hidden context C (characters). */
  hiddenContextChars: 4_000,
  /** One tool's function-calling spec as stored in `tasks.tools` and sent to the agent. */
  toolSchemaBytes: 8 * 1024,
  /** The arguments of one agent tool call (stored in the task's mapping); larger is a tool error. */
  toolArgumentsBytes: 16 * 1024,
  /** One simulated task-tool output (the tool simulator's `response`). */
  toolOutputBytes: 16 * 1024,
  /** One answer of the simulated user. */
  userTurnBytes: 8 * 1024,
  /** The text content of one agent turn (teacher or policy); longer text is cut. */
  agentTurnBytes: 64 * 1024,
  /** Tool calls of one agent turn that are run; later ones are answered with an error. */
  toolCallsPerTurn: 32,
  /** One episode's transcript (`episodes.messages`, as JSON). */
  transcriptBytes: 1024 * 1024,
  /** Transcript text shown to a grader (rubric extractor, judge) for one episode (characters). */
  gradedTranscriptChars: 64 * 1024,
  /** All demonstrations shown to the rubric extractor together (characters), shared equally. */
  rubricDemonstrationsChars: 256 * 1024,
  /** A teacher or student response of a scaling study, stored and graded; longer is cut first. */
  studyResponseBytes: 64 * 1024,
  /** The study judge's free-text verdict read as a verdict; longer is not read (the reminder asks again). */
  studyVerdictBytes: 8 * 1024,
  /** The raw output kept with a recorded rejection (`llm_rejections.raw_output`, characters). */
  rejectionRawChars: 16 * 1024,
  /** Details and messages that travel in Temporal payloads (stage outcomes, failures; characters). */
  detailChars: 2_000,
  /** Any Temporal payload (claim-check: ids and small summaries only). */
  payloadBytes: 256 * 1024,
} as const;

/** UTF-8 length of `text` (a lone surrogate counts as the 3 bytes of U+FFFD it is stored as). */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * The deepest nesting of arrays and objects in JSON text, brackets inside strings skipped; stops
 * counting once `limit` is passed (returns limit + 1). Linear and allocation-free, so it can run
 * on any answer before `JSON.parse`. Text that is not JSON is scanned the same way.
 */
export function jsonTextDepth(text: string, limit: number = BOUNDS.answerDepth): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return limit + 1;
      }
    } else if ((c === 0x5d || c === 0x7d) && depth > 0) depth--;
  }
  return deepest;
}
