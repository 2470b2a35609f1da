import type { Reply, ScriptedRequest } from './model-server.js';

/**
 * A scripted model world for synthesis tests: every role answers deterministically from the task
 * number found in its prompt, so kept and rejected counts are known in advance:
 * task i with i % 5 == 1 gets an invalid tool set, i % 5 == 3 demonstrations that cover nothing.
 */
export const scriptedOutcome = (i: number): 'invalid_tools' | 'low_coverage' | 'kept' =>
  i % 5 === 1 ? 'invalid_tools' : i % 5 === 3 ? 'low_coverage' : 'kept';

/** The persona lines of `count` valid personas (plus refused lines when `withBadLines`). */
export function scriptedPersonas(count: number, withBadLines = true): string {
  const lines = Array.from({ length: count }, (_, i) =>
    JSON.stringify({ id: `p${i}`, persona: `Persona number ${i}: an operations specialist in domain ${i}.` }),
  );
  if (withBadLines) {
    lines.splice(2, 0, JSON.stringify({ id: 'empty', persona: '   ' }));
    lines.splice(5, 0, '{not json');
    lines.splice(9, 0, JSON.stringify({ id: 'p0', persona: 'a duplicate id' }));
  }
  return `${lines.join('\n')}\n`;
}

const tool = (name: string, properties: Record<string, unknown>, required: string[]) => ({
  type: 'function',
  function: {
    name,
    description: `${name.replace(/_/g, ' ')}`,
    parameters: { type: 'object', properties, required },
  },
});

const TOOLS = [
  tool('lookup_record', { id: { type: 'string' } }, ['id']),
  tool('update_record', { id: { type: 'string' }, status: { type: 'string' } }, ['id', 'status']),
];

function text(request: ScriptedRequest): string {
  return request.body.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
}

function taskNumber(request: ScriptedRequest): number {
  const match = /(?:Persona number |scenario-|task-)(\d+)/.exec(text(request));
  if (!match) throw new Error(`no task number in a ${request.role} request`);
  return Number(match[1]);
}

const json = (value: unknown): Reply => JSON.stringify(value);
/** A tool call whose id follows from the task and turn, so the same run asks the same prompts in any order. */
const call = (name: string, args: unknown, id: string): Reply => ({
  toolCalls: [{ name, arguments: args, id }],
});

/** Answers every synthesis role; unknown requests fail loudly so a test never passes by accident. */
export function synthesisScript(request: ScriptedRequest): Reply {
  const schemaName = request.body.response_format?.json_schema?.name;
  switch (request.role) {
    case 'teacher': {
      const i = taskNumber(request);
      if (schemaName === 'toolset') {
        const tools = scriptedOutcome(i) === 'invalid_tools' ? [tool('lookup record', {}, [])] : TOOLS;
        return json({
          scenario: `scenario-${i}: a record is stuck.`,
          workflow: ['Find the record', 'Fix the record'],
          tools,
          forbidden: ['Delete any record'],
          request: `For scenario-${i}, look up record R-${i} and set its status to fixed.`,
        });
      }
      if (schemaName === 'refine') {
        return json({
          tools: [...TOOLS, tool('print_report', {}, [])],
          removed: [],
          distractors: ['print_report'],
        });
      }
      if (schemaName === 'instruction') {
        return json({
          instruction: `Please sort out task-${i} for me.`,
          hiddenContext: `For task-${i}: the record id is R-${i}.`,
        });
      }
      // The teacher acting as the agent in the mock world.
      const turn = request.body.messages.filter((m) => m.role === 'assistant').length;
      if (turn === 0) return call('ask_user', { question: 'Which record do you mean?' }, `call_${i}_0`);
      if (turn === 1) return call('lookup_record', { id: `R-${i}` }, `call_${i}_1`);
      if (turn === 2) return call('update_record', { id: `R-${i}`, status: 'fixed' }, `call_${i}_2`);
      return `Done: R-${i} is fixed.`;
    }
    case 'tool-simulator':
      return json({ equivalentTo: null, response: JSON.stringify({ id: 'R', status: 'open' }) });
    case 'user-simulator':
      return `The record id is R-${taskNumber(request)}.`;
    case 'coverage-judge': {
      // Demonstrations of a low_coverage task carry out no workflow step, others both.
      const executed = scriptedOutcome(taskNumber(request)) !== 'low_coverage';
      return json({
        steps: [0, 1].map((index) => ({ index, executed, evidence: executed ? 'agent calls' : '' })),
      });
    }
    case 'coverage-judge-control':
      // The empty control demonstration: an honest judge finds no step done.
      return json({ steps: [0, 1].map((index) => ({ index, executed: false, evidence: '' })) });
    case 'rubric-extractor':
      return json({
        subGoals: ['The record is found', 'The record is fixed'],
        requiredInteractions: ['Ask which record'],
      });
    default:
      throw new Error(`unscripted role ${request.role}`);
  }
}
