"""BFCL-V4 multi-turn through the official handler and checker, with a policy that replays the ground
truth behind the model boundary: every replayed entry scores valid, and the same entry with the
last call of its last acting turn dropped scores invalid. Two entries of each of the four
categories (the first two in BFCL's order), each trial in its own process as in the worker."""

from __future__ import annotations

import json

import pytest
from eval_support import trial_input

from mockworld_eval import environment
from mockworld_eval.bfcl_trial import entry_ids
from mockworld_eval.contract import BFCL_CATEGORIES
from mockworld_eval.replay import bfcl_plan, task_key
from mockworld_eval.runner import run_trial_process

environment.prepare()
ENTRIES = [(category, task_id) for category in BFCL_CATEGORIES for task_id in entry_ids(category)[:2]]


@pytest.fixture(scope="module")
def plans() -> dict:
    out = {}
    for category, task_id in ENTRIES:
        out[task_key("bfcl", category, task_id, 0)] = bfcl_plan(category, task_id)
        out[task_key("bfcl", category, task_id, 1)] = bfcl_plan(category, task_id, drop_last_call_of_turn=-1)
    return out


def run(url: str, category: str, task_id: str, trial: int) -> dict:
    spec = trial_input(url, "bfcl", category, task_id, trial)
    return run_trial_process(json.dumps(spec), heartbeat=lambda steps: None, interval_s=1.0)


def test_every_category_is_covered():
    assert {category for category, _ in ENTRIES} == set(BFCL_CATEGORIES)
    assert len(ENTRIES) == 8


def test_ground_truth_scores_valid_and_a_dropped_call_invalid(plans, replay_server):
    server = replay_server(plans)
    for category, task_id in ENTRIES:
        full = run(server.url, category, task_id, 0)
        assert (full["reward"], full["termination"], full["detail"]) == (1.0, "completed", None), (task_id, full["detail"])
        assert full["steps"] >= len(plans[task_key("bfcl", category, task_id, 0)]["turns"])
        assert full["trajectory"]["checker"]["valid"] is True

        dropped = run(server.url, category, task_id, 1)
        assert dropped["reward"] == 0.0, task_id
        assert dropped["detail"].startswith("multi_turn:"), dropped["detail"]
        assert dropped["failure"] is None  # a wrong answer is a score, not a model error


def test_plans_follow_the_ground_truth_turns():
    # miss_func: the turn before the held-out function arrives has no ground-truth call, and the
    # holdout turn (no message in the data) still counts one user message, which the handler adds.
    category = "multi_turn_miss_func"
    task_id = entry_ids(category)[0]
    plan = bfcl_plan(category, task_id)
    assert [] in plan["turns"]
    assert plan["userMessages"] == list(range(1, len(plan["turns"]) + 1))
