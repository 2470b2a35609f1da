/**
 * The LLM judge's verdict (seed App. 11.3): its prompt asks for "A" (CORRECT) or "B" (INCORRECT)
 * and, a few lines later, for CORRECT or INCORRECT, so both spellings are read. Anything else is
 * no verdict: the caller records a rejection, and a judge failure never becomes a score.
 */

/**
 * Parses the judge's whole output strictly: true for CORRECT, false for INCORRECT, null for no
 * verdict. Accepted, after trimming and one optional trailing `.` or `!`: `A`, `B` (uppercase
 * only), `CORRECT`, `INCORRECT` (any case), and the prompt's own grade lines `A: CORRECT`,
 * `B: INCORRECT`. Anything else (`a`, `C`, `A: INCORRECT`, `The answer is A`, `"A"`, `A..`, an
 * empty output) → null.
 */
export function parseJudgeVerdict(output: string): boolean | null {
  const text = output.trim().replace(/[.!]$/, '').trimEnd();
  if (text === 'A') return true;
  if (text === 'B') return false;
  const match = /^(?:([AB]):\s?)?([A-Za-z]+)$/.exec(text);
  if (!match) return null;
  const word = match[2]!.toUpperCase();
  const verdict = word === 'CORRECT' ? true : word === 'INCORRECT' ? false : null;
  if (verdict === null || match[1] === undefined) return verdict;
  return (match[1] === 'A') === verdict ? verdict : null;
}
