import type { Judgement } from '../../schemas/rubric-judge.js';
import {
  RUBRIC_LISTS,
  type RubricList,
  type RubricRule,
  type VerdictChecker,
} from '../../schemas/rubric-rules.js';
import type { Rubric } from '../../schemas/synthesis-records.js';
import { checkRule, type RuleMessage, type RuleVerdict } from './rules.js';

/** A verdict as stored: the judge's shape, plus the checker that produced it. */
type Checked<T> = T & { readonly checker: VerdictChecker; readonly evidence: string };

/** A stored judgement: every item's verdict in rubric order, each naming its checker. */
export interface CheckedJudgement {
  readonly forbidden: Checked<Judgement['forbidden'][number]>[];
  readonly subGoals: Checked<Judgement['subGoals'][number]>[];
  readonly requiredInteractions: Checked<Judgement['requiredInteractions'][number]>[];
}

/** A rubric split into what its rules decided and what is left for the judge. */
export interface SplitRubric {
  /** Per list and item: the rule's verdict and kind, or undefined when the judge decides it. */
  readonly ruled: Record<RubricList, (({ kind: RubricRule['kind'] } & RuleVerdict) | undefined)[]>;
  /** The items without a rule, as a rubric of their own (what the judge is shown, renumbered). */
  readonly open: Rubric;
  /** Per list: the original index of each item of `open`. */
  readonly origin: Record<RubricList, number[]>;
}

/** Applies the rubric's rules to the episode; the items without one make up the judge's rubric. */
export function splitRubric(rubric: Rubric, messages: readonly RuleMessage[]): SplitRubric {
  const ruled = {} as SplitRubric['ruled'];
  const open = { forbidden: [], subGoals: [], requiredInteractions: [] } as {
    [K in RubricList]: string[];
  };
  const origin = { forbidden: [], subGoals: [], requiredInteractions: [] } as SplitRubric['origin'];
  for (const list of RUBRIC_LISTS) {
    ruled[list] = rubric[list].map((item, i) => {
      const rule = rubric.checks?.[list]?.[i];
      if (rule) return { kind: rule.kind, ...checkRule(rule, messages) };
      open[list].push(item);
      origin[list].push(i);
      return undefined;
    });
  }
  return { ruled, open, origin };
}

/** True when the judge has something to grade (a rubric with every item ruled needs no call). */
export function needsJudge(split: SplitRubric): boolean {
  return RUBRIC_LISTS.some((list) => split.open[list].length > 0);
}

/** The boolean each list's verdict carries. */
const VERDICT_KEY = {
  forbidden: 'violated',
  subGoals: 'achieved',
  requiredInteractions: 'satisfied',
} as const;

/**
 * The whole rubric's verdicts in rubric order: the rules' where an item has one, the judge's (on
 * the open items, renumbered back) for the rest. `judged` is undefined only when nothing was open.
 */
export function mergeVerdicts(split: SplitRubric, judged: Judgement | undefined): CheckedJudgement {
  const merged = (list: RubricList) => {
    const byIndex = new Map<number, { index: number }>(
      (judged?.[list] ?? []).map((verdict) => [split.origin[list][verdict.index]!, verdict]),
    );
    return split.ruled[list].map((rule, index) => {
      if (rule) {
        const checker: VerdictChecker = `rule:${rule.kind}`;
        return { index, [VERDICT_KEY[list]]: rule.holds, evidence: rule.evidence, checker };
      }
      const verdict = byIndex.get(index);
      // judgementSchema holds the judge to one verdict per open item: a gap is a bug here.
      if (!verdict) throw new Error(`no verdict on ${list}[${index}] from the judge`);
      return { evidence: '', ...verdict, index, checker: 'judge' as VerdictChecker };
    });
  };
  return {
    forbidden: merged('forbidden') as CheckedJudgement['forbidden'],
    subGoals: merged('subGoals') as CheckedJudgement['subGoals'],
    requiredInteractions: merged('requiredInteractions') as CheckedJudgement['requiredInteractions'],
  };
}
