import { MAX_ANSWER_CHARS } from '../../schemas/reasoning-correctness.js';

/** How a final answer was found in a response. */
export interface ExtractedAnswer {
  readonly answer: string;
  readonly from: 'boxed' | 'final-answer line' | 'last line';
}

/**
 * The final answer of a response: the content of its last `\boxed{...}` (or `\fbox{...}`), else
 * the text after the last "final answer:" / "the answer is" (the line it is on); null when there
 * is neither, or when what is found is empty or longer than {@link MAX_ANSWER_CHARS}. A reasoning
 * block (`<think>...</think>`) is never searched: only the answer after it counts. With
 * `lastLine`, a response with neither gives its last non-empty line (search answers are often a
 * plain sentence).
 */
export function extractFinalAnswer(
  response: string,
  options: { lastLine?: boolean } = {},
): ExtractedAnswer | null {
  const text = withoutReasoning(response);
  const boxed = lastBoxed(text);
  if (boxed !== null) return bounded(boxed, 'boxed');
  const line = lastAnswerLine(text);
  if (line !== null) return bounded(line, 'final-answer line');
  if (options.lastLine) {
    const last = text
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
      .at(-1);
    if (last) return bounded(last, 'last line');
  }
  return null;
}

function bounded(raw: string, from: ExtractedAnswer['from']): ExtractedAnswer | null {
  const answer = cleaned(raw);
  return answer && answer.length <= MAX_ANSWER_CHARS ? { answer, from } : null;
}

/** The response after its last closed reasoning block; an unclosed one leaves nothing to read. */
function withoutReasoning(response: string): string {
  const close = response.lastIndexOf('</think>');
  if (close >= 0) return response.slice(close + '</think>'.length);
  return response.includes('<think>') ? '' : response;
}

/** The balanced-brace content of the last `\boxed{` / `\fbox{`, or `\boxed 5`. */
function lastBoxed(text: string): string | null {
  const starts = [...text.matchAll(/\\(?:boxed|fbox)\s*(\{|\s+(\S+))/g)];
  for (let i = starts.length - 1; i >= 0; i -= 1) {
    const match = starts[i]!;
    if (match[1] !== '{') return match[2]!.replace(/[$.,;]+$/, '');
    let depth = 0;
    const open = match.index + match[0].length - 1;
    for (let at = open; at < text.length; at += 1) {
      if (text[at] === '\\') {
        at += 1; // an escaped brace (\{ \}) does not open or close
        continue;
      }
      if (text[at] === '{') depth += 1;
      else if (text[at] === '}' && --depth === 0) return text.slice(open + 1, at);
    }
  }
  return null;
}

/** What follows the last "final answer" / "the answer is" marker, to the end of its line. */
function lastAnswerLine(text: string): string | null {
  const marker = /(?:final\s+answer|the\s+answer\s+is|^\s*answer)\s*(?:is)?\s*[:：]?\s*(?:\*\*)?\s*(.+)$/gim;
  const found = [...text.matchAll(marker)].at(-1);
  return found ? found[1]! : null;
}

/** Without markdown emphasis, math delimiters and a closing full stop. */
function cleaned(raw: string): string {
  let answer = raw
    .trim()
    .replace(/^\*\*|\*\*$/g, '')
    .trim();
  for (let changed = true; changed;) {
    const before = answer;
    answer = answer
      .replace(/^\$\$?([\s\S]*?)\$\$?$/, '$1')
      .replace(/^\\\(([\s\S]*)\\\)$/, '$1')
      .replace(/^\\\[([\s\S]*)\\\]$/, '$1')
      .replace(/[.。]$/, '')
      .trim();
    changed = answer !== before;
  }
  return answer;
}
