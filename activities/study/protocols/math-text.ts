/**
 * Markup removal for final answers: what a model wraps around an answer (math delimiters, `\text`,
 * Markdown bold, spacing commands) is dropped, so that `$\dfrac{1}{2}$` and `\frac{1}{2}` read the
 * same. The LaTeX thin space `\,` and the Unicode thin spaces are kept as U+2009, because inside a
 * number they separate thousands (`1\,234`).
 */

/** The thin space that stands for `\,`, U+2009, U+202F and U+00A0 after {@link stripMathMarkup}. */
export const THIN_SPACE = '\u2009';

/** Commands whose single braced argument is kept and the command dropped (`\text{B}` → `B`). */
const UNWRAPPED =
  /\\(?:text|textrm|textbf|textit|mathrm|mathbf|mathit|mbox|operatorname|boxed)\s*\{([^{}]*)\}/g;

/** An answer without its markup, whitespace collapsed, a trailing full stop removed. */
export function stripMathMarkup(raw: string): string {
  let text = raw
    .replace(/\*\*|__|`/g, '')
    .replace(/\$|\\\(|\\\)|\\\[|\\\]/g, '')
    .replace(/\\(?:displaystyle|left|right)(?![A-Za-z])/g, '')
    .replace(/\\[dt]frac(?![A-Za-z])/g, '\\frac')
    .replace(/\{,\}/g, ',')
    .replace(/\\%/g, '%')
    .replace(/\u2212/g, '-')
    .replace(/\\,|[\u2009\u202F\u00A0]/g, THIN_SPACE)
    .replace(/\\[!;:]|\\quad(?![A-Za-z])|\\qquad(?![A-Za-z])|~/g, ' ');
  let previous: string;
  do {
    previous = text;
    text = text.replace(UNWRAPPED, '$1');
  } while (text !== previous);
  text = text
    .replace(/[ \t\r\n]+/g, ' ')
    .replace(new RegExp(`^[\\s${THIN_SPACE}]+|[\\s${THIN_SPACE}]+$`, 'g'), '')
    .replace(/^\*+|\*+$/g, '');
  return text.replace(/\.$/, '').trim();
}

/** An answer reduced for string identity: markup stripped and every kind of space removed. */
export function compactAnswer(raw: string): string {
  return stripMathMarkup(raw).replace(/[\s\u2009]+/g, '');
}
