import { readFileSync } from 'node:fs';
import type { Reply, Script, ScriptedRequest, ScriptedToolCall } from './model-server.js';

/**
 * A policy (and a user simulator) that replays benchmark ground truth, as a script of the scripted
 * model server: the model boundary of the evaluation tests. The plans come from the evaluation
 * worker's own loader (workers/evaluation/mockworld_eval/replay.py, which documents their shape), so
 * what is replayed is exactly the benchmark's gold data; this side only finds where in the plan a
 * request is, from the request itself.
 */

/** A BFCL entry: each turn's ground-truth calls; cumulative user messages after each turn. */
interface BfclPlan {
  readonly kind: 'bfcl';
  readonly turns: readonly (readonly ScriptedToolCall[])[];
  readonly userMessages: readonly number[];
}

/** A tau2 task: the agent's and the user simulator's replies, in call order. */
interface Tau2Plan {
  readonly kind: 'tau2';
  readonly agent: readonly PlannedReply[];
  readonly user: readonly PlannedReply[];
}

type PlannedReply = { readonly toolCalls: readonly ScriptedToolCall[] } | { readonly content: string };

/** Plans by the trial's `X-Mockworld-Eval-Task` header (`benchmark/group/task/trial`). */
export type ReplayPlans = Readonly<Record<string, BfclPlan | Tau2Plan>>;

export function readReplayPlans(file: string): ReplayPlans {
  return JSON.parse(readFileSync(file, 'utf8')) as ReplayPlans;
}

/** The script: answers every request whose task has a plan; a request without one is an error. */
export function evalReplayScript(plans: ReplayPlans): Script {
  return (request: ScriptedRequest): Reply => {
    const header = request.headers['x-mockworld-eval-task'];
    const key = Array.isArray(header) ? header[0] : header;
    const plan = key === undefined ? undefined : plans[key];
    if (!plan) throw new Error(`no replay plan for task ${JSON.stringify(key)}`);
    return plan.kind === 'bfcl' ? bfclReply(plan, request) : tau2Reply(plan, request);
  };
}

const countRole = (request: ScriptedRequest, role: string) =>
  request.body.messages.filter((m) => m.role === role).length;

/** First call of a turn: the turn's calls; later calls of the turn: text, which ends it. */
function bfclReply(plan: BfclPlan, request: ScriptedRequest): Reply {
  const users = countRole(request, 'user');
  const turn = plan.userMessages.indexOf(users);
  if (turn < 0) throw new Error(`BFCL replay: ${users} user messages match no turn of the plan`);
  const messages = request.body.messages;
  let lastUser = messages.length - 1;
  while (lastUser >= 0 && messages[lastUser]!.role !== 'user') lastUser--;
  const answeredInTurn = messages.slice(lastUser + 1).some((m) => m.role === 'assistant');
  const calls = plan.turns[turn] ?? [];
  return !answeredInTurn && calls.length > 0 ? { toolCalls: calls } : 'Done.';
}

/**
 * The n-th call of a party gets its n-th reply. The agent's history starts with tau2's fixed
 * greeting (an assistant message no model produced); in the user simulator's view its own messages
 * are the assistant ones.
 */
function tau2Reply(plan: Tau2Plan, request: ScriptedRequest): Reply {
  const assistants = countRole(request, 'assistant');
  const isUser = request.role === 'user-simulator';
  const replies = isUser ? plan.user : plan.agent;
  const index = isUser ? assistants : assistants - 1;
  const reply = replies[index];
  if (!reply) throw new Error(`tau2 replay: no ${isUser ? 'user' : 'agent'} reply ${index} in the plan`);
  return 'toolCalls' in reply ? { toolCalls: reply.toolCalls } : reply.content;
}
