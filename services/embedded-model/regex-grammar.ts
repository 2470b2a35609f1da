/**
 * A JSON Schema `pattern` as a GBNF rule body over the JSON text of a string (quotes included), so
 * the embedded model's grammar can only write strings the pattern matches: a tool name of
 * `^[A-Za-z0-9_-]{1,64}$` is decided while decoding, not refused afterwards.
 *
 * The ECMAScript subset translated: literals and escapes, `.`, classes (ranges, negation, `\d \w
 * \s` and their negations), groups (`(...)`, `(?:...)`, `(?<name>...)`), alternation, the
 * quantifiers `* + ? {n} {n,} {n,m}` (lazy ones too: same language), and `^`/`$` at the ends of
 * a top-level alternative. Anything else (look-around, back references, `\b`, `\p{...}`, anchors
 * elsewhere, repetition counts llama.cpp refuses) gives `undefined`: the caller keeps the plain
 * string and the validation after decoding decides.
 *
 * The grammar may admit less than the pattern, never more: `.` and negated classes only write
 * characters that need no escape in JSON, and a character that needs one (a quote, a backslash,
 * a control character) is written in its JSON escape when a class or literal asks for it.
 */

/** Largest repetition count llama.cpp's grammar parser accepts in every position (measured: 999). */
export const MAX_GRAMMAR_REPETITION = 999;

/** One character of a JSON string, as node-llama-cpp writes it (escapes included). */
export const JSON_STRING_CHAR_RULE = `[^"\\\\\\x7F\\x00-\\x1F] | "\\\\" ["\\\\/bfnrt] | "\\\\u" [0-9a-fA-F]{4}`;

/** Characters written as themselves inside a JSON string (the rest need an escape). */
const PLAIN = `"\\\\\\x7F\\x00-\\x1F`; // excluded from plain: quote, backslash, DEL, controls

type Range = readonly [number, number];
type Node =
  | { readonly kind: 'literal'; readonly char: number }
  | { readonly kind: 'class'; readonly ranges: readonly Range[]; readonly negated: boolean }
  | { readonly kind: 'group'; readonly alternatives: readonly Node[][] }
  | { readonly kind: 'repeat'; readonly node: Node; readonly min: number; readonly max: number | null };

/** A top-level alternative and whether it is anchored at each end. */
interface Branch {
  readonly nodes: Node[];
  readonly start: boolean;
  readonly end: boolean;
}

class Unsupported extends Error {}

const DIGIT: Range[] = [[0x30, 0x39]];
const WORD: Range[] = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
const SPACE: Range[] = [
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x2028, 0x2029],
  [0xfeff, 0xfeff],
];

/**
 * The GBNF for a JSON string matching `pattern`, using `charRule` for "any JSON string character";
 * undefined when the pattern uses something outside the translated subset.
 */
export function patternToGbnf(pattern: string, charRule: string): string | undefined {
  try {
    const branches = new Parser(pattern).parseTop();
    const bodies = branches.map((branch) =>
      [branch.start ? '' : `${charRule}*`, sequence(branch.nodes), branch.end ? '' : `${charRule}*`]
        .filter((part) => part !== '')
        .join(' '),
    );
    const body = bodies.map((b) => (b === '' ? '""' : b)).join(' | ');
    return `"\\"" (${body}) "\\""`;
  } catch (error) {
    if (error instanceof Unsupported) return undefined;
    throw error;
  }
}

class Parser {
  private pos = 0;
  constructor(private readonly source: string) {}

  parseTop(): Branch[] {
    const branches: Branch[] = [];
    for (;;) {
      const start = this.eat('^');
      const nodes = this.sequence(true);
      const end = this.eat('$');
      branches.push({ nodes, start, end });
      if (this.eat('|')) continue;
      if (this.pos < this.source.length) throw new Unsupported(`unexpected ${this.source[this.pos]}`);
      return branches;
    }
  }

  private alternatives(): Node[][] {
    const alternatives = [this.sequence(false)];
    while (this.eat('|')) alternatives.push(this.sequence(false));
    return alternatives;
  }

  private sequence(top: boolean): Node[] {
    const nodes: Node[] = [];
    while (this.pos < this.source.length) {
      const c = this.source[this.pos]!;
      if (c === '|' || c === ')') break;
      if (c === '$' && top && this.pos === this.source.length - 1) break;
      if (c === '$' && top && this.source[this.pos + 1] === '|') break;
      if (c === '^' || c === '$') throw new Unsupported('anchor inside a pattern');
      const atom = this.atom();
      nodes.push(this.quantified(atom));
    }
    return nodes;
  }

  private atom(): Node {
    const c = this.next();
    switch (c) {
      case '(': {
        if (this.eat('?')) {
          if (this.eat(':')) {
            /* non-capturing */
          } else if (this.source[this.pos] === '<' && /[A-Za-z_]/.test(this.source[this.pos + 1] ?? '')) {
            const close = this.source.indexOf('>', this.pos);
            if (close < 0) throw new Unsupported('unclosed group name');
            this.pos = close + 1;
          } else throw new Unsupported('look-around');
        }
        const alternatives = this.alternatives();
        if (!this.eat(')')) throw new Unsupported('unclosed group');
        return { kind: 'group', alternatives };
      }
      case '[':
        return this.characterClass();
      case '.':
        return {
          kind: 'class',
          ranges: [
            [0x0a, 0x0a],
            [0x0d, 0x0d],
            [0x2028, 0x2029],
          ],
          negated: true,
        };
      case '\\':
        return this.escape(false);
      case '*':
      case '+':
      case '?':
        throw new Unsupported('quantifier without an atom');
      case '{':
        if (/^\d+(,\d*)?\}/.test(this.source.slice(this.pos)))
          throw new Unsupported('quantifier without an atom');
        return { kind: 'literal', char: 0x7b }; // a literal "{", as ECMAScript reads it outside unicode mode
      default:
        return { kind: 'literal', char: c.codePointAt(0)! };
    }
  }

  private quantified(atom: Node): Node {
    let min: number;
    let max: number | null;
    const c = this.source[this.pos];
    if (c === '*') [min, max] = [0, null];
    else if (c === '+') [min, max] = [1, null];
    else if (c === '?') [min, max] = [0, 1];
    else if (c === '{') {
      const match = /^\{(\d+)(,(\d*))?\}/.exec(this.source.slice(this.pos));
      if (!match) return atom; // a literal "{", as ECMAScript reads it outside unicode mode
      min = Number(match[1]);
      max = match[2] === undefined ? min : match[3] === '' ? null : Number(match[3]);
      this.pos += match[0].length - 1;
    } else return atom;
    this.pos++;
    this.eat('?'); // lazy: same language
    if (max !== null && max < min) throw new Unsupported('repetition maximum below its minimum');
    if (min > MAX_GRAMMAR_REPETITION || (max !== null && max > MAX_GRAMMAR_REPETITION))
      throw new Unsupported('repetition count over what the grammar parser accepts');
    return { kind: 'repeat', node: atom, min, max };
  }

  private characterClass(): Node {
    const negated = this.eat('^');
    const ranges: Range[] = [];
    let first = true;
    while (!(this.source[this.pos] === ']' && !first)) {
      if (this.pos >= this.source.length) throw new Unsupported('unclosed class');
      first = false;
      const low = this.classAtom();
      if (Array.isArray(low)) {
        ranges.push(...low);
        continue;
      }
      if (
        this.source[this.pos] === '-' &&
        this.source[this.pos + 1] !== ']' &&
        this.pos + 1 < this.source.length
      ) {
        this.pos++;
        const high = this.classAtom();
        if (Array.isArray(high) || high < low) throw new Unsupported('bad class range');
        ranges.push([low, high]);
      } else ranges.push([low, low]);
    }
    this.pos++;
    return { kind: 'class', ranges, negated };
  }

  /** One class member: a code point, or the ranges of a class escape (`\d`). */
  private classAtom(): number | Range[] {
    const c = this.next();
    if (c !== '\\') return c.codePointAt(0)!;
    if (this.source[this.pos] === 'b') {
      this.pos++;
      return 0x08; // [\b] is a backspace
    }
    const escaped = this.escape(true);
    if (escaped.kind === 'literal') return escaped.char;
    if (escaped.kind === 'class' && !escaped.negated) return [...escaped.ranges];
    throw new Unsupported('negated class escape inside a class');
  }

  private escape(inClass: boolean): Node {
    const c = this.next();
    const cls = (ranges: Range[], negated: boolean): Node => ({ kind: 'class', ranges, negated });
    switch (c) {
      case 'd':
        return cls(DIGIT, false);
      case 'D':
        return cls(DIGIT, true);
      case 'w':
        return cls(WORD, false);
      case 'W':
        return cls(WORD, true);
      case 's':
        return cls(SPACE, false);
      case 'S':
        return cls(SPACE, true);
      case 'n':
        return { kind: 'literal', char: 0x0a };
      case 'r':
        return { kind: 'literal', char: 0x0d };
      case 't':
        return { kind: 'literal', char: 0x09 };
      case 'f':
        return { kind: 'literal', char: 0x0c };
      case 'v':
        return { kind: 'literal', char: 0x0b };
      case '0':
        if (/\d/.test(this.source[this.pos] ?? '')) throw new Unsupported('octal escape');
        return { kind: 'literal', char: 0 };
      case 'x': {
        const hex = /^[0-9a-fA-F]{2}/.exec(this.source.slice(this.pos));
        if (!hex) throw new Unsupported('bad \\x escape');
        this.pos += 2;
        return { kind: 'literal', char: parseInt(hex[0], 16) };
      }
      case 'u': {
        const hex = /^[0-9a-fA-F]{4}/.exec(this.source.slice(this.pos));
        if (!hex) throw new Unsupported('bad \\u escape');
        this.pos += 4;
        return { kind: 'literal', char: parseInt(hex[0], 16) };
      }
      default:
        // \b \B, back references, \p{...}, \k<...>, \c: outside the subset.
        if (/[A-Za-z0-9]/.test(c) && !(inClass && c === '-')) throw new Unsupported(`escape \\${c}`);
        return { kind: 'literal', char: c.codePointAt(0)! };
    }
  }

  private next(): string {
    const c = this.source.codePointAt(this.pos);
    if (c === undefined) throw new Unsupported('unexpected end');
    const char = String.fromCodePoint(c);
    this.pos += char.length;
    return char;
  }

  private eat(char: string): boolean {
    if (this.source[this.pos] !== char) return false;
    this.pos++;
    return true;
  }
}

function sequence(nodes: readonly Node[]): string {
  return nodes.map(emit).join(' ');
}

function emit(node: Node): string {
  switch (node.kind) {
    case 'literal':
      return literal(node.char);
    case 'class':
      return node.negated ? negatedClass(node.ranges) : positiveClass(node.ranges);
    case 'group':
      return `(${node.alternatives.map((a) => (a.length ? sequence(a) : '""')).join(' | ')})`;
    case 'repeat': {
      const inner = `(${emit(node.node)})`;
      if (node.min === 0 && node.max === null) return `${inner}*`;
      if (node.min === 1 && node.max === null) return `${inner}+`;
      if (node.min === 0 && node.max === 1) return `${inner}?`;
      if (node.max === 0) return '""';
      if (node.max === null) return `${inner}{${node.min},}`;
      if (node.min === node.max) return `${inner}{${node.min}}`;
      return `${inner}{${node.min},${node.max}}`;
    }
  }
}

/** A character as its JSON text (escaped when JSON needs it), as a GBNF literal. */
function literal(char: number): string {
  const json = JSON.stringify(String.fromCodePoint(char)).slice(1, -1);
  return `"${json.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function needsEscape(char: number): boolean {
  return char < 0x20 || char === 0x22 || char === 0x5c || char === 0x7f;
}

/** A code point inside a GBNF character class. */
function classChar(char: number): string {
  if (/[A-Za-z0-9 ]/.test(String.fromCodePoint(char))) return String.fromCodePoint(char);
  return char <= 0xffff
    ? `\\u${char.toString(16).padStart(4, '0')}`
    : `\\U${char.toString(16).padStart(8, '0')}`;
}

function classRange([low, high]: Range): string {
  return low === high ? classChar(low) : `${classChar(low)}-${classChar(high)}`;
}

/**
 * The characters of `ranges`: those written plainly in one GBNF class, those JSON escapes as
 * literal alternatives (a range of more than 32 escaped characters cannot occur: only 35 exist).
 */
function positiveClass(ranges: readonly Range[]): string {
  const plain: Range[] = [];
  const escaped: number[] = [];
  for (const [low, high] of ranges) {
    let start: number | undefined;
    for (let c = low; c <= Math.min(high, 0x7f); c++) {
      if (needsEscape(c)) {
        if (start !== undefined) plain.push([start, c - 1]);
        start = undefined;
        escaped.push(c);
      } else start ??= c;
    }
    if (start !== undefined) plain.push([start, Math.min(high, 0x7f)]);
    if (high > 0x7f) plain.push([Math.max(low, 0x80), high]);
  }
  const parts = [
    ...(plain.length ? [`[${plain.map(classRange).join('')}]`] : []),
    ...[...new Set(escaped)].map(literal),
  ];
  if (parts.length === 0) throw new Unsupported('empty class');
  return parts.length === 1 ? parts[0]! : `(${parts.join(' | ')})`;
}

/** Everything but `ranges`, limited to characters JSON writes plainly. */
function negatedClass(ranges: readonly Range[]): string {
  return `[^${ranges.map(classRange).join('')}${PLAIN}]`;
}
