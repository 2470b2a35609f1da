import { describe, expect, it } from 'vitest';
import { checkRule } from '../../../activities/reward/rules.js';
import { ExportedTaskSchema } from '../../../schemas/exported-task.js';
import { RubricRuleSchema } from '../../../schemas/rubric-rules.js';
import { TRANSCRIPT } from './fixtures.js';

const call = (name: string, args: string) => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ function: { name, arguments: args } }],
});

describe('rubric rules', () => {
  it('finds a call by tool and argument values, strings trimmed and case-insensitive', () => {
    expect(checkRule({ kind: 'called', tool: 'get_order' }, TRANSCRIPT)).toEqual({
      holds: true,
      evidence: 'get_order({"orderId":"ORD-7731"})',
    });
    expect(
      checkRule({ kind: 'called', tool: 'get_order', args: { orderId: ' ord-7731 ' } }, TRANSCRIPT).holds,
    ).toBe(true);
    expect(
      checkRule({ kind: 'called', tool: 'get_order', args: { orderId: 'ORD-7732' } }, TRANSCRIPT),
    ).toEqual({
      holds: false,
      evidence: '',
    });
    expect(checkRule({ kind: 'called', tool: 'issue_refund' }, TRANSCRIPT).holds).toBe(false);
  });

  it('needs every listed argument in one call; a number matches its digits; bad JSON matches no argument', () => {
    const messages = [
      call('book', '{"seats":4,"date":"2027-01-03"}'),
      call('book', '{"date":"2027-01-04"'),
      call('book', '{"seats":2}'),
    ];
    expect(
      checkRule({ kind: 'called', tool: 'book', args: { seats: '4', date: '2027-01-03' } }, messages).holds,
    ).toBe(true);
    expect(
      checkRule({ kind: 'called', tool: 'book', args: { seats: 2, date: '2027-01-03' } }, messages).holds,
    ).toBe(false);
    expect(checkRule({ kind: 'called', tool: 'book', args: { date: '2027-01-04' } }, messages).holds).toBe(
      false,
    );
    expect(checkRule({ kind: 'called', tool: 'book' }, messages).holds).toBe(true);
  });

  it('matches questions to the user and the agent’s own words with case-insensitive patterns', () => {
    expect(checkRule({ kind: 'asked', matches: 'ORDER (id|number)' }, TRANSCRIPT)).toEqual({
      holds: true,
      evidence: 'What is your order id?',
    });
    expect(checkRule({ kind: 'asked', matches: 'email' }, TRANSCRIPT).holds).toBe(false);
    // A tool call's arguments are not the agent's words, nor is the user's message.
    expect(checkRule({ kind: 'said', matches: 'shipped' }, TRANSCRIPT).evidence).toBe(
      'Order ORD-7731 has shipped.',
    );
    expect(checkRule({ kind: 'said', matches: 'order id' }, TRANSCRIPT).holds).toBe(false);
    expect(checkRule({ kind: 'said', matches: 'where is' }, TRANSCRIPT).holds).toBe(false);
  });

  it('refuses a rule that cannot run or hold: a bad pattern, more rules than items, an unknown tool', () => {
    expect(RubricRuleSchema.safeParse({ kind: 'said', matches: '(unclosed' }).error?.issues[0]?.message).toBe(
      'is not a valid regular expression',
    );
    expect(RubricRuleSchema.safeParse({ kind: 'called' }).success).toBe(false);
    expect(RubricRuleSchema.safeParse({ kind: 'grep', matches: 'x' }).success).toBe(false);

    const line = {
      task_id: 't1',
      prompt: [{ role: 'user', content: 'Where is my order?' }],
      tools: [{ type: 'function', function: { name: 'get_order', parameters: { type: 'object' } } }],
      hidden_context: 'ORD-7731',
      rubric: {
        forbidden: [],
        subGoals: ['Look up the order'],
        requiredInteractions: [],
        checks: { subGoals: [{ kind: 'called', tool: 'get_order' }, null] },
      },
    };
    const parsed = ExportedTaskSchema.safeParse(line);
    expect(parsed.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      ['rubric.checks', 'checks.subGoals has 2 rules for 1 items'],
    ]);
    line.rubric.checks.subGoals.pop();
    expect(ExportedTaskSchema.parse(line).rubric.checks).toEqual({
      subGoals: [{ kind: 'called', tool: 'get_order' }],
    });
    line.rubric.checks.subGoals = [{ kind: 'called', tool: 'get_ordr' }];
    expect(
      ExportedTaskSchema.safeParse(line).error?.issues.map((i) => [i.path.join('.'), i.message]),
    ).toEqual([['rubric.checks.subGoals.0.tool', "calls get_ordr, which is not one of the task's tools"]]);
  });
});
