"""The evaluation worker's activities (names in contract.py). Synchronous: each runs in the worker's
thread pool, and a trial's work happens in its own process (runner.py). Every activity heartbeats
(a trial its step count; a listing or a summary from a background thread), so that a killed worker
is noticed within the heartbeat timeout the workflow sets (workflows/evaluation-activities.ts), not
at the start-to-close timeout."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError

from . import benchmarks, environment, metrics, store
from .contract import (
    LIST_TASKS,
    RUN_TRIAL,
    SUMMARIZE,
    ContractError,
    ListTasksInput,
    Record,
    SummarizeInput,
    TrialInput,
    TrialSummary,
    dump,
)
from .outcome import InputError
from .runner import TransientTrialError, TrialCrashed, run_trial_process
from .trial_metrics import record_trial
from .versions import data_version, package_versions

# Failure types a retry cannot fix (the workflow's retry policy lists them as non-retryable too).
BAD_INPUT = "EvalBadInput"
CONFLICT = "EvalTrialConflict"
ERROR_TYPES = (BAD_INPUT, CONFLICT)


def _bad_input(message: str) -> ApplicationError:
    return ApplicationError(message, type=BAD_INPUT, non_retryable=True)


def _parse(record: type[Record], payload) -> Record:
    """The input validated against its schema file (contract.py); EvalBadInput naming each bad field."""
    if not isinstance(payload, dict):
        raise _bad_input(f"{activity.info().activity_type}: input: expected an object, got {payload!r:.80}")
    try:
        return record(payload)
    except ContractError as error:
        raise _bad_input(f"{activity.info().activity_type}: {'; '.join(error.problems)}") from None


def trial_config(spec: TrialInput) -> dict:
    """What decides a trial's score, besides the model weights behind the endpoint: stored with the
    row and hashed, so rows from different settings or benchmark versions are never mixed up."""
    config = dump(spec)
    config.pop("evaluationId")
    config.pop("wallSeconds", None)  # decides only whether a stuck trial ends, not its score
    return {
        "trial": config,
        "packages": package_versions(),
        "data": data_version(spec.benchmark, spec.group),
    }


def config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _summary(row: dict, stored: bool) -> dict:
    return dump(
        TrialSummary(
            evaluationId=row["evaluation_id"],
            benchmark=row["benchmark"],
            group=row["task_group"],
            taskId=row["task_id"],
            trial=row["trial"],
            reward=row["reward"],
            termination=row["termination"],
            steps=row["steps"],
            promptTokens=row["prompt_tokens"],
            completionTokens=row["completion_tokens"],
            failure=row["failure"],
            stored=stored,
        )
    )


def _heartbeat_interval() -> float:
    timeout = activity.info().heartbeat_timeout
    return max(0.5, (timeout or timedelta(seconds=30)).total_seconds() / 3)


@contextlib.contextmanager
def _heartbeating(phase: str) -> Iterator[None]:
    """Heartbeats ``{"phase": phase}`` at once and then every third of the heartbeat timeout from a
    background thread, while the block runs (a listing imports a benchmark's code and reads its
    data: seconds to minutes on a busy machine, with no step to report)."""
    stop = threading.Event()
    interval = _heartbeat_interval()
    details = {"phase": phase}

    def loop() -> None:
        while not stop.wait(interval):
            activity.heartbeat(details)

    activity.heartbeat(details)
    context = contextvars.copy_context()  # the activity's context lives in a contextvar
    thread = threading.Thread(target=context.run, args=(loop,), name="eval-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@activity.defn(name=RUN_TRIAL)
def run_trial(payload: dict) -> dict:
    """Runs one trial exactly once: a stored row is returned as it is; otherwise the trial runs in a
    fresh process, heartbeating its step count, and its outcome is stored (first write wins)."""
    spec = _parse(TrialInput, payload)
    config = trial_config(spec)
    digest = config_hash(config)
    key = (spec.evaluation_id, spec.benchmark, spec.group, spec.task_id, spec.trial)
    with store.connect() as conn:
        found = store.find(conn, key)
    if found is not None:
        if found["config_hash"] != digest:
            raise ApplicationError(
                f"trial {'/'.join(map(str, key))} is already stored with other settings or benchmark versions "
                f"(config hash {found['config_hash'][:12]}, now {digest[:12]}): start a new evaluation id",
                type=CONFLICT,
                non_retryable=True,
            )
        record_trial(spec.benchmark, spec.group, found["termination"], stored=True, seconds=0.0)
        return _summary(found, stored=True)

    started = time.monotonic()
    try:
        outcome = run_trial_process(
            json.dumps(spec.as_json()),
            heartbeat=lambda steps: activity.heartbeat({"steps": steps}),
            interval_s=_heartbeat_interval(),
            wall_seconds=spec.wall_seconds,
        )
    except InputError as error:
        raise _bad_input(str(error)) from None
    except TransientTrialError as error:
        raise ApplicationError(str(error), type="EvalModelUnreachable") from None
    except TrialCrashed as error:
        raise ApplicationError(str(error), type="EvalTrialCrashed") from None
    row = {
        "evaluation_id": spec.evaluation_id,
        "benchmark": spec.benchmark,
        "task_group": spec.group,
        "task_id": spec.task_id,
        "trial": spec.trial,
        "reward": float(outcome["reward"]),
        "termination": outcome["termination"],
        "steps": int(outcome["steps"]),
        "prompt_tokens": int(outcome["prompt_tokens"]),
        "completion_tokens": int(outcome["completion_tokens"]),
        "failure": outcome.get("failure"),
        "detail": outcome.get("detail"),
        "trajectory": outcome["trajectory"],
        "package_versions": config["packages"],
        "data_version": config["data"],
        "config": config["trial"],
        "config_hash": digest,
        "wall_seconds": time.monotonic() - started,
        "cpu_seconds": outcome["cpu_seconds"],
    }
    with store.connect() as conn:
        summary = _summary(store.insert(conn, row), stored=False)
    record_trial(spec.benchmark, spec.group, row["termination"], stored=False, seconds=row["wall_seconds"])
    return summary


@activity.defn(name=LIST_TASKS)
def list_tasks(payload: dict) -> dict:
    """The task ids of a category or domain (and split), in the benchmark's order; `taskIds` picks
    some (each must exist), `limit` keeps the first ones."""
    spec = _parse(ListTasksInput, payload)
    with _heartbeating("list"):
        return _list_tasks(spec)


def _list_tasks(spec: ListTasksInput) -> dict:
    environment.prepare()
    try:
        ids = benchmarks.get(spec.benchmark).task_ids(spec.group, spec.split)
    except InputError as error:
        raise _bad_input(str(error)) from None
    if spec.task_ids is not None:
        missing = [t for t in spec.task_ids if t not in set(ids)]
        if missing:
            raise _bad_input(f"{spec.benchmark} {spec.group} has no task {', '.join(map(repr, missing[:10]))}")
        ids = [t for t in ids if t in set(spec.task_ids)]
    if spec.limit is not None:
        ids = ids[: spec.limit]
    return {"taskIds": ids, "packages": package_versions(), "data": data_version(spec.benchmark, spec.group)}


@activity.defn(name=SUMMARIZE)
def summarize(payload: dict) -> dict:
    """The run's metrics from its stored trials (metrics.py), and the paired comparison with
    `compareWith` when given."""
    spec = _parse(SummarizeInput, payload)
    with _heartbeating("summarize"):
        with store.connect() as conn:
            rows = store.rows_of(conn, spec.evaluation_id)
            other = store.rows_of(conn, spec.compare_with) if spec.compare_with else None
        return metrics.summarize(rows, other, spec)


ACTIVITIES = [run_trial, list_tasks, summarize]
