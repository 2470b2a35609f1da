/**
 * Numeric final answers: parsing the forms a teacher or a gold target writes (integers,
 * decimals, thousands separators, fractions, percentages, scientific notation) and the
 * deterministic comparison of two of them. The comparison may only say `incorrect` when no
 * careful judge could call the answer correct, so anything that may be a rounding of the other
 * value is left `undecided` for the LLM judge.
 */
import type { FastVerdict } from '../../../schemas/study-verdict.js';
import { stripMathMarkup, THIN_SPACE } from './math-text.js';

/**
 * Relative tolerance of numeric equality: |a − b| ≤ 1e-9 · max(|a|, |b|). It absorbs
 * floating-point error only (`0.1 + 0.2`, `1/3` against `2/6`); a written rounding such as
 * `0.333` for `1/3` is not equality but is never called incorrect (see {@link compareNumeric}).
 */
export const RELATIVE_TOLERANCE = 1e-9;

/** A parsed numeric answer. */
export interface NumericAnswer {
  /** The value as written; a percentage keeps its percent value (`50%` → 50). */
  readonly value: number;
  /** Whether it was written with a percent sign (`%` or `\%`). */
  readonly percent: boolean;
  /**
   * The place value of its last written digit, in the unit of `value`: `3.14` → 0.01, `1.2e3` →
   * 100, an integer → 1; 0 for a value written exactly (a fraction, a bare power of ten).
   */
  readonly resolution: number;
}

const UNSIGNED_DECIMAL = String.raw`(?:\d+(?:\.\d+)?|\.\d+)`;
const SIGNED_DECIMAL = String.raw`[+-]?${UNSIGNED_DECIMAL}`;
/** Digits grouped by three with `,` or a thin space; a leading zero group (`0,5`) is not a thousands group. */
const GROUPED = String.raw`[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?|[1-9]\d{0,2}(?:${THIN_SPACE}\d{3})+(?:\.\d+)?`;
const EXPONENT = String.raw`(?:\{\s*([+-]?\d+)\s*\}|([+-]?\d+))`;
const TIMES = String.raw`(?:\\times|\\cdot|×|·|\*)`;

const PLAIN = new RegExp(`^([+-])?(${GROUPED}|${UNSIGNED_DECIMAL})$`);
const E_NOTATION = new RegExp(`^([+-])?(${UNSIGNED_DECIMAL})\\s?[eE]\\s?([+-]?\\d+)$`);
const TIMES_POWER = new RegExp(`^([+-])?(${UNSIGNED_DECIMAL})\\s?${TIMES}\\s?10\\s?\\^\\s?${EXPONENT}$`);
const POWER = new RegExp(`^([+-])?10\\s?\\^\\s?${EXPONENT}$`);
const SLASH = new RegExp(`^([+-])?(${UNSIGNED_DECIMAL})\\s?/\\s?(${UNSIGNED_DECIMAL})$`);
const FRAC = new RegExp(
  `^([+-])?\\\\frac\\s?\\{\\s?(${SIGNED_DECIMAL})\\s?\\}\\s?\\{\\s?(${SIGNED_DECIMAL})\\s?\\}$`,
);
const FRAC_DIGITS = /^([+-])?\\frac\s?(\d)\s?(\d)$/;
/** A leading assignment to one plain identifier (`x =`, `ans=`), dropped before parsing. */
const ASSIGNMENT = /^[A-Za-z][A-Za-z0-9]*\s?=\s?/;

function decimalsOf(digits: string): number {
  const point = digits.indexOf('.');
  return point < 0 ? 0 : digits.length - point - 1;
}

function signed(sign: string | undefined, value: number): number {
  return sign === '-' ? -value : value;
}

function parseUnpercented(text: string): Omit<NumericAnswer, 'percent'> | null {
  let match = PLAIN.exec(text);
  if (match) {
    const digits = match[2]!.replace(new RegExp(`[,${THIN_SPACE}]`, 'g'), '');
    return { value: signed(match[1], Number(digits)), resolution: 10 ** -decimalsOf(digits) };
  }
  match = E_NOTATION.exec(text);
  if (match) {
    const exponent = Number(match[3]);
    return {
      value: signed(match[1], Number(`${match[2]}e${exponent}`)),
      resolution: 10 ** (exponent - decimalsOf(match[2]!)),
    };
  }
  match = TIMES_POWER.exec(text);
  if (match) {
    const exponent = Number(match[3] ?? match[4]);
    return {
      value: signed(match[1], Number(`${match[2]}e${exponent}`)),
      resolution: 10 ** (exponent - decimalsOf(match[2]!)),
    };
  }
  match = POWER.exec(text);
  if (match) return { value: signed(match[1], Number(`1e${match[2] ?? match[3]}`)), resolution: 0 };
  match = SLASH.exec(text) ?? FRAC.exec(text) ?? FRAC_DIGITS.exec(text);
  if (match) {
    const denominator = Number(match[3]);
    if (denominator === 0) return null;
    return { value: signed(match[1], Number(match[2]) / denominator), resolution: 0 };
  }
  return null;
}

/**
 * Parses a numeric answer, or returns null when `raw` is anything else (an expression, a value
 * with a unit, a mixed number such as `3 1/2`, text). Accepted: `-12`, `+3.5`, `.5`, `1,234,567`,
 * `1\,234`, `1{,}234.5`, `3/4`, `-\frac{1}{2}`, `\dfrac{3}{4}`, `\frac12`, `50%`, `12.5\%`,
 * `1.2e-3`, `1.2 \times 10^{-3}`, `10^{5}`, each optionally inside math delimiters, `\text{}` or
 * Markdown bold, optionally after `x =`, optionally with a trailing full stop.
 */
export function parseNumericAnswer(raw: string): NumericAnswer | null {
  let text = stripMathMarkup(raw).replace(ASSIGNMENT, '');
  const percent = /%$/.test(text);
  if (percent) text = text.replace(/\s?%$/, '');
  const parsed = parseUnpercented(text);
  if (!parsed || !Number.isFinite(parsed.value) || !Number.isFinite(parsed.resolution)) return null;
  return { ...parsed, percent };
}

/** Whether two values are equal within {@link RELATIVE_TOLERANCE}. */
export function numericallyEqual(a: number, b: number): boolean {
  return a === b || Math.abs(a - b) <= RELATIVE_TOLERANCE * Math.max(Math.abs(a), Math.abs(b));
}

interface Scaled {
  readonly value: number;
  readonly resolution: number;
}

/** Whether `other` rounds to `written` at the place value of `written`'s last digit. */
function roundsTo(written: Scaled, other: Scaled): boolean {
  if (written.resolution === 0) return false;
  const slack = (written.resolution / 2) * (1 + 1e-9) + 1e-12 * Math.max(Math.abs(written.value), 1);
  return Math.abs(other.value - written.value) <= slack;
}

function compareScaled(a: Scaled, b: Scaled): FastVerdict {
  if (numericallyEqual(a.value, b.value)) return 'correct';
  if (roundsTo(a, b) || roundsTo(b, a)) return 'undecided';
  return 'incorrect';
}

/**
 * Compares a gold value with an answer's (symmetric):
 * - equal within {@link RELATIVE_TOLERANCE} → `correct`;
 * - one may be the other rounded to its last written digit (`0.33` vs `1/3`, `3.1` vs `3.14`,
 *   `4` vs `3.6`) → `undecided`, for the judge to weigh against the question;
 * - otherwise → `incorrect`.
 *
 * A percentage against a bare number is decided only when both readings agree: the percentage as
 * a fraction (`50%` = 0.5) and the percent sign merely dropped (`50%` vs `50`). `50%` vs `0.5` is
 * `correct`; `50%` vs `50` is `undecided` (the sign was dropped, or a fraction meant); `50%` vs
 * `0.6` is `incorrect`.
 */
export function compareNumeric(gold: NumericAnswer, answer: NumericAnswer): FastVerdict {
  if (gold.percent === answer.percent) return compareScaled(gold, answer);
  const percentage = gold.percent ? gold : answer;
  const bare = gold.percent ? answer : gold;
  const asFraction = compareScaled(
    { value: percentage.value / 100, resolution: percentage.resolution / 100 },
    bare,
  );
  if (asFraction === 'correct') return 'correct';
  const signDropped = compareScaled(percentage, bare);
  return asFraction === 'incorrect' && signDropped === 'incorrect' ? 'incorrect' : 'undecided';
}
