"""Ground-truth replay plans: what a policy that replays a task's gold answers would say at each model
call, for the scripted model server (testkit/eval-replay.ts) to play behind the model boundary. They
prove the installation and the whole path (handler or orchestrator, environments, checker or
evaluator, storage): every replay must score full reward, and the same replay with its last
state-changing call dropped must not.

A plan is keyed by the trial's `X-Mockworld-Eval-Task` header (bfcl_trial.trial_headers):

- BFCL: {"kind": "bfcl", "turns": [[{name, arguments}, ...], ...], "userMessages": [cumulative
  user messages after each turn]}: at the first model call of turn i the policy makes the turn's
  ground-truth calls, in order; at any later call of the turn it answers text, ending the turn.
- tau2: {"kind": "tau2", "agent": [reply, ...], "user": [reply, ...]}: the n-th call of the agent
  (of the user simulator) gets the n-th reply; a reply is {"toolCalls": [...]} or {"content": "..."}.

`python -m mockworld_eval.replay [--trials N] bfcl multi_turn_base multi_turn_base_0 ...` prints the plans
(the same plan for trials 0..N-1).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import json
import sys
from typing import Any, Optional

from . import environment

STOP = "###STOP###"


def task_key(benchmark: str, group: str, task_id: str, trial: int) -> str:
    return f"{benchmark}/{group}/{task_id}/{trial}"


# --- BFCL -------------------------------------------------------------------------------------------


@functools.cache
def _parameter_names(involved_classes: tuple[str, ...]) -> dict[str, list[str]]:
    """Positional parameters of every method of the entry's environment classes (the ground truth
    writes some calls positionally, e.g. sort('final_report.pdf'))."""
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    names: dict[str, list[str]] = {}
    for class_name in involved_classes:
        cls = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name]), class_name)
        for method_name, method in inspect.getmembers(cls, predicate=inspect.isfunction):
            if not method_name.startswith("_"):
                names[method_name] = [p for p in inspect.signature(method).parameters if p != "self"]
    return names


def bfcl_call(text: str, parameters: dict[str, list[str]]) -> dict:
    """A ground-truth call string ("mv(source='a', destination='b')") as a tool call."""
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain function call: {text!r}")
    name = node.func.id
    arguments = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}
    for position, value in enumerate(node.args):
        arguments[parameters[name][position]] = ast.literal_eval(value)
    return {"name": name, "arguments": arguments}


def _bfcl_plan_of(entry: dict, truth: list, drop_last_call_of_turn: Optional[int]) -> dict:
    parameters = _parameter_names(tuple(entry["involved_classes"]))
    turns = [[bfcl_call(call, parameters) for call in turn] for turn in truth]
    if drop_last_call_of_turn is not None:
        index = drop_last_call_of_turn
        if index == -1:
            index = max(i for i, turn in enumerate(turns) if turn)
        turns[index] = turns[index][:-1]
    user_messages, total = [], 0
    for turn_index, messages in enumerate(entry["question"]):
        # A holdout turn (miss_func) has no message; the handler adds one user message for it.
        total += max(1, sum(1 for m in messages if m.get("role") == "user"))
        user_messages.append(total)
    return {"kind": "bfcl", "turns": turns, "userMessages": user_messages}


def bfcl_plan(category: str, task_id: str, drop_last_call_of_turn: Optional[int] = None) -> dict:
    """The ground truth of one entry as a plan; `drop_last_call_of_turn` leaves out that turn's last call
    (-1: the last turn that has calls)."""
    environment.prepare()
    from .bfcl_trial import load_entry

    entry, truth = load_entry(category, task_id)
    return _bfcl_plan_of(entry, truth, drop_last_call_of_turn)


def bfcl_plans(category: str, task_ids: Optional[list[str]] = None) -> dict[str, dict]:
    """The plans of many entries of a category (all of them by default), by task id: the category's
    entries and ground truth are loaded once (bfcl_trial.load_entries), not once per entry."""
    environment.prepare()
    from .bfcl_trial import load_entries

    entries, truths = load_entries(category)
    wanted = task_ids if task_ids is not None else list(entries)
    return {task_id: _bfcl_plan_of(entries[task_id], truths[task_id], None) for task_id in wanted}


# --- tau2 -------------------------------------------------------------------------------------------


@functools.cache
def _write_tools(domain: str) -> dict[str, frozenset[str]]:
    """The domain's state-changing tools (tau2's ToolType.WRITE), of the agent and of the user."""
    from tau2.environment.toolkit import ToolType
    from tau2.registry import registry

    env = registry.get_env_constructor(domain)()
    out = {}
    for requestor, toolkit in (("assistant", env.tools), ("user", env.user_tools)):
        names = toolkit.get_tools().keys() if toolkit is not None else ()
        out[requestor] = frozenset(n for n in names if toolkit.tool_type(n) == ToolType.WRITE)
    return out


def _is_write(domain: str, requestor: str, name: str) -> bool:
    return name in _write_tools(domain)["user" if requestor == "user" else "assistant"]


def _tool_call(action) -> dict:
    return {"name": action.name, "arguments": action.arguments}


def tau2_plan(domain: str, task_id: str, split: str = "base", drop_last_write: bool = False) -> dict:
    """The task's gold actions, in order, each made by its requestor (agent or user), one call per
    model call; the agent hands over to the user with a text message between runs of actions, says
    everything the task wants communicated at the end, and the user then stops."""
    environment.prepare()
    from .tau2_trial import load_task

    task = load_task(domain, split, task_id)
    criteria = task.evaluation_criteria
    actions = list(criteria.actions or []) if criteria else []
    if drop_last_write:
        writes = [i for i, a in enumerate(actions) if _is_write(domain, a.requestor, a.name)]
        if not writes:
            raise ValueError(f"tau2 {domain} task {task_id} has no state-changing gold action to drop")
        del actions[writes[-1]]
    agent: list[dict] = []
    user: list[dict] = [{"content": f"Hi, I need help. ({domain} task {task_id})"}]
    runs: list[tuple[str, list]] = []
    for action in actions:
        who = "user" if action.requestor == "user" else "agent"
        if runs and runs[-1][0] == who:
            runs[-1][1].append(action)
        else:
            runs.append((who, [action]))
    # After the user's opening the floor is the agent's. An agent run is made while it holds the
    # floor; before a user run the agent hands the floor over, and the user's "done" gives it back.
    for who, run in runs:
        if who == "agent":
            agent.extend({"toolCalls": [_tool_call(a)]} for a in run)
        else:
            agent.append({"content": "Please do the following on your side, then tell me when it is done."})
            user.extend({"toolCalls": [_tool_call(a)]} for a in run)
            user.append({"content": "Done, what next?"})
    communicate = list(criteria.communicate_info or []) if criteria else []
    agent.append({"content": " ".join(["That completes your request.", *communicate])})
    user.append({"content": f"Thank you. {STOP}"})
    return {"kind": "tau2", "agent": agent, "user": user}


def main(argv: list[str]) -> int:
    trials = 1
    if argv[:1] == ["--trials"]:
        trials, argv = int(argv[1]), argv[2:]
    if len(argv) < 3:
        print("usage: python -m mockworld_eval.replay [--trials N] BENCHMARK GROUP TASK_ID...", file=sys.stderr)
        return 2
    benchmark, group, ids = argv[0], argv[1], argv[2:]
    plans: dict[str, Any] = {}
    from . import benchmarks

    try:
        by_id = benchmarks.get(benchmark).replay_plans(group, ids)
    except benchmarks.UnknownBenchmark as error:
        print(error, file=sys.stderr)
        return 2
    for task_id, plan in by_id.items():
        for trial in range(trials):
            plans[task_key(benchmark, group, task_id, trial)] = plan
    print(json.dumps(plans))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
