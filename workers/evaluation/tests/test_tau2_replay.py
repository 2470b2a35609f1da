"""tau2-bench through the official orchestrator (run.run_task, LLM agent and LLM user simulator) and
evaluator, with an agent and a user that replay the task's gold actions behind the model boundary:
every replayed task scores 1.0, and the same task with its last state-changing action dropped
scores 0.0. Two tasks of each domain: the first two of the base split that have a state-changing
gold action (without one, dropping nothing would change the database). Telecom's gold actions are
the user's own (toggling the phone's settings), made through the user simulator's tools."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from eval_support import trial_input

from mockworld_eval import environment
from mockworld_eval.contract import TAU2_DOMAINS
from mockworld_eval.replay import tau2_plan, task_key
from mockworld_eval.runner import run_trial_process
from mockworld_eval.tau2_trial import task_ids

environment.prepare()


def tasks_with_writes(domain: str, count: int) -> list[str]:
    out = []
    for task_id in task_ids(domain, "base"):
        try:
            tau2_plan(domain, task_id, drop_last_write=True)
        except ValueError:
            continue
        out.append(task_id)
        if len(out) == count:
            return out
    return out


TASKS = [(domain, task_id) for domain in TAU2_DOMAINS for task_id in tasks_with_writes(domain, 2)]


@pytest.fixture(scope="module")
def plans() -> dict:
    out = {}
    for domain, task_id in TASKS:
        out[task_key("tau2", domain, task_id, 0)] = tau2_plan(domain, task_id)
        out[task_key("tau2", domain, task_id, 1)] = tau2_plan(domain, task_id, drop_last_write=True)
    return out


def test_every_domain_is_covered():
    assert [domain for domain, _ in TASKS] == [d for d in TAU2_DOMAINS for _ in range(2)]


def test_gold_actions_score_one_and_a_dropped_write_zero(plans, replay_server):
    server = replay_server(plans)

    def run(job: tuple[str, str, int]) -> dict:
        domain, task_id, trial = job
        spec = trial_input(server.url, "tau2", domain, task_id, trial)
        return run_trial_process(json.dumps(spec), heartbeat=lambda steps: None, interval_s=1.0)

    jobs = [(domain, task_id, trial) for domain, task_id in TASKS for trial in (0, 1)]
    with ThreadPoolExecutor(max_workers=3) as pool:
        outcomes = dict(zip(jobs, pool.map(run, jobs)))
    for (domain, task_id, trial), outcome in outcomes.items():
        assert outcome["failure"] is None, outcome["failure"]
        assert outcome["termination"] == "user_stop", (domain, task_id, outcome["termination"])
        reward_info = outcome["trajectory"]["reward_info"]
        if trial == 0:
            assert outcome["reward"] == 1.0, (domain, task_id, reward_info)
        else:
            assert outcome["reward"] == 0.0, (domain, task_id, reward_info)
        assert outcome["steps"] > 0 and outcome["prompt_tokens"] > 0


def test_a_plan_hands_the_floor_between_agent_and_user():
    domain, task_id = next((d, t) for d, t in TASKS if d == "telecom")
    plan = tau2_plan(domain, task_id)
    # The user's gold actions are its own tool calls; the user ends the conversation.
    assert any("toolCalls" in reply for reply in plan["user"])
    assert plan["user"][-1]["content"].endswith("###STOP###")
