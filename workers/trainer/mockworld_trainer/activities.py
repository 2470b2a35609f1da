"""Temporal activities of the GPU trainer, called by name from TypeScript workflows on ``mockworld-gpu``.

Each takes one JSON object and returns one JSON object (small: data travels by reference). Errors
that retrying cannot fix are ``ApplicationError`` with ``non_retryable=True`` and ``type`` one of
TrainerBadRequest, TrainerStepOutOfOrder, TrainerStepMismatch, TrainerCheckpointMissing; anything
else (CUDA out of memory, an unreachable database, a killed process) is an ordinary, retryable failure.

trainer.grpoStep / trainer.sftStep, input:
    {"run_id": str,                 the training run (the workflow id)
     "step": int >= 1,              step n needs step n-1 applied; step 0 is the initial policy
     "batch_ref": {"kind": "jsonl", "path": "/abs.jsonl"}
                | {"kind": "postgres", "table"?: "trainer_batches", "run_id"?: str, "step"?: int},
     "model"?: {"kind": "tiny", "seed"?: int, "hidden_size"?: int, "num_layers"?: int, "num_heads"?: int,
                "num_kv_heads"?: int, "intermediate_size"?: int}
             | {"kind": "pretrained", "path": "/local/dir", "dtype"?: "float32" | "bfloat16"},
                                    required until step 1 is applied; afterwards, if given, must match
     "config"?: {"lr", "weight_decay", "max_grad_norm", "eps_low", "eps_high", "kl_coef", "adv_eps",
                 "mini_batch_groups", "micro_batch_size", "max_seq_len"}   (see config.StepConfig)}
  output:
    {"run_id": str, "step": int, "kind": "grpo" | "sft",
     "metrics": {grpo: loss, clip_frac, clip_frac_low, clip_frac_high, ratio_mean, approx_kl, grad_norm,
                 skipped_updates, reward_mean, reward_std, adv_abs_mean, num_samples, num_groups,
                 zero_variance_groups, num_tokens, num_updates, truncated_samples, duration_s,
                 [ref_kl when kl_coef > 0];
                 sft: loss, grad_norm, skipped_updates, num_samples, num_tokens, num_updates,
                 truncated_samples, duration_s}
                 all numbers; a non-finite value is null (an update with a non-finite gradient norm is
                 skipped and counted in skipped_updates),
     "model_path": str,             this step's weights directory (save_pretrained layout)
     "applied_at": ISO-8601 str,    when the step was first applied
     "replayed": bool}              true when the step had already been applied and nothing was stepped

trainer.saveCheckpoint, input {"run_id": str, "step"?: int (default: the latest)};
  output {"run_id": str, "step": int, "model_path": str, "pinned": true}. Pins the step's weights so
  retention (MOCKWORLD_CHECKPOINT_KEEP newest steps) never removes them. Idempotent.

trainer.registerRun, input {"run_id": str, "model": model spec as above};
  output: as trainer.latestPolicy. Fixes the run's model before its first step (run.json), so a run
  that is never stepped (a study cell without examples) is served at step 0 as its own model. Idempotent;
  a different model after a step is TrainerStepMismatch.

trainer.latestPolicy, input {"run_id": str};
  output {"run_id": str, "step": int, "model_path": str | null, "base_model": model spec | null,
          "kind": "grpo" | "sft" | null, "metrics": object | null}. At step 0, model_path is the
  pretrained base path (null for a tiny model, or before the run's first step names its model).

Long steps heartbeat ``{"phase": "start" | "old_logprobs" | "ref_logprobs" | "update" | "save", "done": int,
"total": int}`` between micro-batches and from a background thread every heartbeat_timeout / 3 (10 s
when none is set), so that a slow save still heartbeats.
"""

from __future__ import annotations

import contextvars
import functools
import threading
import time
from collections.abc import Callable
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from .errors import BadRequestError, TrainerError
from .trainer import Trainer

STEP_FIELDS = {"run_id", "step", "batch_ref", "model", "config"}


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


def _non_retryable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """TrainerError -> ApplicationError(non_retryable, type=<its type_name>)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TrainerError as e:
            raise ApplicationError(str(e), type=e.type_name, non_retryable=True) from e

    return wrapper


def _object(data: Any, allowed: set[str], required: set[str]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise BadRequestError("input: expected a JSON object")
    problems = [f"{k}: unknown field (valid: {', '.join(sorted(allowed))})" for k in data if k not in allowed]
    problems += [f"{k}: required" for k in sorted(required) if k not in data]
    if "run_id" in data and not isinstance(data["run_id"], str):
        problems.append("run_id: expected a string")
    if problems:
        raise BadRequestError("invalid input:\n  " + "\n  ".join(problems))
    return data


class TrainerActivities:
    """The trainer activities, bound to one Trainer (one model in memory, one step at a time)."""

    def __init__(self, trainer: Trainer | None = None) -> None:
        self.trainer = trainer or Trainer()

    def _step(self, data: Any, kind: str) -> dict[str, Any]:
        d = _object(data, STEP_FIELDS, {"run_id", "step", "batch_ref"})
        with Heartbeater() as beat:
            return self.trainer.train_step(
                d["run_id"],
                d["step"],
                d["batch_ref"],
                kind=kind,
                model=d.get("model"),
                config=d.get("config"),
                progress=beat,
            )

    @activity.defn(name="trainer.grpoStep")
    @_non_retryable
    def grpo_step(self, data: dict[str, Any]) -> dict[str, Any]:
        """Applies GRPO step ``step`` of ``run_id`` exactly once (shapes in the module docstring)."""
        return self._step(data, "grpo")

    @activity.defn(name="trainer.sftStep")
    @_non_retryable
    def sft_step(self, data: dict[str, Any]) -> dict[str, Any]:
        """Applies SFT step ``step`` of ``run_id`` exactly once (shapes in the module docstring)."""
        return self._step(data, "sft")

    @activity.defn(name="trainer.saveCheckpoint")
    @_non_retryable
    def save_checkpoint(self, data: dict[str, Any]) -> dict[str, Any]:
        """Pins a step's weights against retention and returns their directory."""
        d = _object(data, {"run_id", "step"}, {"run_id"})
        return self.trainer.save_checkpoint(d["run_id"], d.get("step"))

    @activity.defn(name="trainer.registerRun")
    @_non_retryable
    def register_run(self, data: dict[str, Any]) -> dict[str, Any]:
        """Fixes a run's model before its first step (its step 0 is then served as that model)."""
        d = _object(data, {"run_id", "model"}, {"run_id", "model"})
        return self.trainer.register_run(d["run_id"], d["model"])

    @activity.defn(name="trainer.latestPolicy")
    @_non_retryable
    def latest_policy(self, data: dict[str, Any]) -> dict[str, Any]:
        """The newest applied step of a run and where its weights are."""
        d = _object(data, {"run_id"}, {"run_id"})
        return self.trainer.latest_policy(d["run_id"])

    def all(self) -> list[Callable[..., Any]]:
        return [self.grpo_step, self.sft_step, self.save_checkpoint, self.register_run, self.latest_policy]
