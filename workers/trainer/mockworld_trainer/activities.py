"""Temporal activities of the GPU trainer, called by name from TypeScript workflows on ``mockworld-gpu``.

Each takes one JSON object and returns one JSON object (small: data travels by reference). Their
names, inputs and outputs are the contract in schemas/trainer-contract.ts, emitted as JSON Schema
into schemas/json/trainer/ (activities.json lists the activities and their files); every input is
validated against its file here, every bad path named in one TrainerBadRequest.

Errors that retrying cannot fix are ``ApplicationError`` with ``non_retryable=True`` and ``type`` one of
the contract's error types (errors.py); anything else (CUDA out of memory, an unreachable database,
a rank of the group gone) is an ordinary, retryable failure, reported as a small ``ApplicationError``
of the exception's type name (its message and where it was raised; the traceback goes to the log):
Temporal keeps at most 4 KB of a pending activity's last failure, and a torch traceback through
FSDP's collectives is longer, so the server would replace it with "Failure exceeds size limit.". Long steps heartbeat step-heartbeat.json
between micro-batches and from a background thread every heartbeat_timeout / 3 (10 s when none is
set), so that a slow save still heartbeats. Steps and ``trainer.trackIteration`` feed the experiment
trackers (tracking.py), whose failures are warnings, never a failed activity; steps are also counted
and timed on the worker's Prometheus endpoint (step_metrics.py).
"""

from __future__ import annotations

import contextvars
import functools
import logging
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, CancelledError, FailureError

from . import contract
from .errors import TrainerError
from .optim import Progress
from .step_metrics import record_step
from .tracking import Tracker, flat_config, numeric_leaves
from .trainer import Trainer


class Heartbeater:
    """Heartbeats the latest progress: on each update (at most once a second) and from a background thread."""

    def __init__(self, min_gap_s: float = 1.0) -> None:
        timeout = activity.info().heartbeat_timeout
        self.interval = max(0.5, timeout.total_seconds() / 3) if timeout else 10.0
        self.min_gap = min_gap_s
        self.details: dict[str, Any] = {"phase": "start", "done": 0, "total": 0}
        self._last = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __call__(self, phase: str, done: int, total: int) -> None:
        self.details = {"phase": phase, "done": done, "total": total}
        now = time.monotonic()
        if now - self._last >= self.min_gap or done == total:
            self._last = now
            activity.heartbeat(self.details)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            activity.heartbeat(self.details)

    def __enter__(self) -> Heartbeater:
        activity.heartbeat(self.details)
        ctx = contextvars.copy_context()  # the activity context lives in a contextvar
        self._thread = threading.Thread(target=ctx.run, args=(self._loop,), name="trainer-heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


log = logging.getLogger("mockworld.trainer.activities")

# What a retryable failure carries of its exception: Temporal keeps at most 4 KB of a pending
# activity's last failure (message, type, stack trace and causes together).
FAILURE_MESSAGE_CHARS = 1_500
FAILURE_FRAMES = 3


def bounded_failure(e: BaseException) -> ApplicationError:
    """A retryable ApplicationError for an exception of no contract type: its type name, its message
    (cut to FAILURE_MESSAGE_CHARS) and the innermost FAILURE_FRAMES frames it was raised through."""
    message = str(e)
    if len(message) > FAILURE_MESSAGE_CHARS:
        message = message[:FAILURE_MESSAGE_CHARS] + f"... ({len(message)} characters)"
    frames = traceback.extract_tb(e.__traceback__)[-FAILURE_FRAMES:]
    where = "; ".join(f"{f.filename.rsplit('site-packages/', 1)[-1]}:{f.lineno} in {f.name}" for f in frames)
    return ApplicationError(f"{type(e).__name__}: {message}" + (f" (at {where})" if where else ""), type=type(e).__name__)


def _non_retryable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """TrainerError -> ApplicationError(non_retryable, type=<its type_name>); any other exception ->
    a bounded, retryable ApplicationError (bounded_failure), its full traceback logged here."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TrainerError as e:
            raise ApplicationError(str(e), type=e.type_name, non_retryable=True) from e
        except FailureError:  # ApplicationError, CancelledError...: Temporal's own, as raised
            raise
        except Exception as e:  # noqa: BLE001 - reported to Temporal bounded, retried by its policy
            log.warning("%s failed (retryable)", getattr(fn, "__name__", "activity"), exc_info=True)
            raise bounded_failure(e) from None

    return wrapper


def _input(activity: str, data: Any) -> dict[str, Any]:
    """The activity's input, validated against its contract file, with the defaults it declares."""
    return contract.validate(contract.activity_schema(activity, "input"), data, f"{activity} input")


class TrainerActivities:
    """The trainer activities, bound to one Trainer (one model in memory, one step at a time)."""

    def __init__(self, trainer: Trainer | None = None, tracker: Tracker | None = None) -> None:
        self.trainer = trainer or Trainer()
        # Experiment tracking (tracking.py): this process alone writes it (rank 0 of a group).
        self.tracker = tracker or Tracker()

    def _step(self, data: Any, kind: str) -> dict[str, Any]:
        d = _input(f"trainer.{kind}Step", data)
        started = time.monotonic()
        # The SDK raises a cancellation into this thread wherever it runs; a step is only left at
        # its safe points (below), never inside a collective or a save.
        with Heartbeater() as beat, activity.shield_thread_cancel_exception():
            result = self.trainer.train_step(
                d["run_id"],
                d["step"],
                d["batch_ref"],
                kind=kind,
                model=d.get("model"),
                config=d.get("config"),
                progress=self._safe_points(beat),
            )
            record_step(kind, bool(result["replayed"]), time.monotonic() - started)
            # Written once per step (a replay finds it tracked); a failing backend is a warning only.
            self.tracker.track(
                result["run_id"],
                result["step"],
                "trainer",
                numeric_leaves(result["metrics"], "trainer"),
                flat_config({"kind": kind, "model": d.get("model"), "step_config": d.get("config")}, "trainer"),
            )
            return result

    def _safe_points(self, beat: Heartbeater) -> Progress:
        """The step's progress, which is also where a cancelled step stops: between micro-batches,
        before the save, on a one-rank trainer (the step is then not applied, and the in-memory
        weights are reloaded from the last committed step, trainer.py). A group's ranks run every
        micro-batch's collectives together and rank 0 cannot leave them alone: a group's step
        finishes and is committed, and the cancellation is reported after it."""
        alone = isinstance(self.trainer, Trainer) and self.trainer.ranks.world == 1  # not a GroupTrainer

        def progress(phase: str, done: int, total: int) -> None:
            beat(phase, done, total)
            if alone and not phase.startswith("save") and activity.is_cancelled():
                raise CancelledError(f"cancelled during {phase} ({done}/{total}), before the step was applied")

        return progress

    @activity.defn(name="trainer.grpoStep")
    @_non_retryable
    def grpo_step(self, data: dict[str, Any]) -> dict[str, Any]:
        """Applies GRPO step ``step`` of ``run_id`` exactly once (contract: step-input.json, step-result.json)."""
        return self._step(data, "grpo")

    @activity.defn(name="trainer.sftStep")
    @_non_retryable
    def sft_step(self, data: dict[str, Any]) -> dict[str, Any]:
        """Applies SFT step ``step`` of ``run_id`` exactly once (contract: step-input.json, step-result.json)."""
        return self._step(data, "sft")

    @activity.defn(name="trainer.saveCheckpoint")
    @_non_retryable
    def save_checkpoint(self, data: dict[str, Any]) -> dict[str, Any]:
        """Pins a step's weights against retention and returns their directory."""
        d = _input("trainer.saveCheckpoint", data)
        return self.trainer.save_checkpoint(d["run_id"], d.get("step"))

    @activity.defn(name="trainer.registerRun")
    @_non_retryable
    def register_run(self, data: dict[str, Any]) -> dict[str, Any]:
        """Fixes a run's model before its first step (its step 0 is then served as that model)."""
        d = _input("trainer.registerRun", data)
        return self.trainer.register_run(d["run_id"], d["model"])

    @activity.defn(name="trainer.latestPolicy")
    @_non_retryable
    def latest_policy(self, data: dict[str, Any]) -> dict[str, Any]:
        """The newest applied step of a run and where its weights are."""
        d = _input("trainer.latestPolicy", data)
        return self.trainer.latest_policy(d["run_id"])

    @activity.defn(name="trainer.trackIteration")
    @_non_retryable
    def track_iteration(self, data: dict[str, Any]) -> dict[str, Any]:
        """An iteration's metrics as the viewer stores them, at its step, to the run's trackers."""
        d = _input("trainer.trackIteration", data)
        metrics = {k: v for k, v in d["metrics"].items() if k not in ("iteration", "trainer")}
        with Heartbeater():  # a slow tracker (W&B's first contact) must not time the call out
            written = self.tracker.track(
                d["run_id"], d["step"], "iteration", numeric_leaves(metrics), flat_config(d.get("config") or {}, "run")
            )
        return {"run_id": d["run_id"], "step": d["step"], "written": written}

    def all(self) -> list[Callable[..., Any]]:
        return [
            self.grpo_step,
            self.sft_step,
            self.save_checkpoint,
            self.register_run,
            self.latest_policy,
            self.track_iteration,
        ]
