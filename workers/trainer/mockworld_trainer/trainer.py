"""Exactly-once trainer steps on top of at-least-once activities.

``Trainer.train_step(run_id, step, batch_ref)`` is idempotent by (run_id, step) (ARCHITECTURE.md, "How a spec
flows", 4: "a retried step returns the recorded result"):

* step <= latest applied: the recorded result is returned and nothing is stepped (the same batch_ref
  and kind are required, else StepMismatchError);
* step == latest + 1: the state of step latest is loaded (kept in memory between steps, else read from
  its checkpoint), the update is applied, and step, weights, optimizer state and result are written in
  one atomic rename; if another worker won that rename, its record is returned instead;
* step > latest + 1: StepOutOfOrderError, which says which step to apply first.

Step 0 is the initial policy (the model spec); steps count from 1. One step runs at a time per process.
"""

from __future__ import annotations

import math
import os
import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from . import contract
from .batches import canonical, load_batch, parse_batch_ref
from .checkpoint import CheckpointStore, disk_wait_s, save_when_space
from .config import ModelSpec, parse_model_spec, parse_step_config, to_dict
from .determinism import configure_torch
from .errors import BadRequestError, CheckpointMissingError, StepMismatchError, StepOutOfOrderError
from .group_state import master_spec, prepare, save_group_step
from .grpo_step import grpo_update
from .lora import load_policy_model
from .model import ChatTemplateTokenizer, Policy, load_model, load_tokenizer
from .optim import Progress, apply_step_config, no_progress
from .ranks import Ranks
from .ranks import current as current_ranks
from .sft import sft_update

KINDS = ("grpo", "sft")
log = logging.getLogger("mockworld.trainer")


def _log_disk_wait(run_id: str, step: int, error: BaseException, delay: float, progress: Progress) -> None:
    """Says why a computed step is not saved yet: the heartbeat details show it in the Temporal UI."""
    log.warning(
        "run %s step %d: the checkpoint directory is full (%s); the step is computed and its save is "
        "tried again in %.0f s (free space there, or raise MOCKWORLD_CHECKPOINT_DISK_WAIT_S)",
        run_id, step, error, delay,
    )
    progress("save: waiting for disk space", 0, 1)


def default_device() -> torch.device:
    """MOCKWORLD_TRAINER_DEVICE if set (cpu, cuda, cuda:1), else the first GPU, else the CPU."""
    name = os.environ.get("MOCKWORLD_TRAINER_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


@dataclass
class _RunState:
    run_id: str
    step: int
    policy: Policy
    optimizer: torch.optim.Optimizer


def _result(record: dict[str, Any], step_dir: Path, replayed: bool) -> dict[str, Any]:
    """A step's result; a LoRA run's model_path is its merged weights (with ``merge``) or its adapters."""
    lora = record["model"].get("lora")
    adapter = str(step_dir / "adapter") if lora else None
    return {
        "run_id": record["run_id"],
        "step": record["step"],
        "kind": record["kind"],
        "metrics": record["metrics"],
        "model_path": str(step_dir / "model") if not lora or lora["merge"] else adapter,
        "adapter_path": adapter,
        "applied_at": record["applied_at"],
        "replayed": replayed,
    }


class Trainer:
    """Holds at most one run's policy and optimizer in memory; everything durable is in the store."""

    def __init__(
        self, store: CheckpointStore | None = None, device: torch.device | None = None, ranks: Ranks | None = None
    ) -> None:
        self.store = store or CheckpointStore()
        self.device = device or default_device()
        configure_torch()  # the same thread count and algorithms in every process that applies steps
        # Under torchrun every rank holds one: steps are collective, and rank 0 alone writes the
        # run's files (group.py sends each call to every rank).
        self.ranks = ranks or current_ranks()
        self._lock = threading.Lock()
        self._state: _RunState | None = None
        self._ref: tuple[str, Policy] | None = None

    # --- public operations ---------------------------------------------------------------------
    def release(self) -> None:
        """Drops the run held in memory (its model, optimizer and reference policy); the store keeps
        everything. Under FSDP the sharded model holds the process group, which must be freed
        before the interpreter shuts down (group.leave)."""
        with self._lock:
            self._state = None
            self._ref = None

    def train_step(
        self,
        run_id: str,
        step: int,
        batch_ref: Any,
        *,
        kind: str = "grpo",
        model: Any = None,
        config: Any = None,
        progress: Progress = no_progress,
    ) -> dict[str, Any]:
        """Applies step ``step`` of ``run_id`` exactly once; see the module docstring."""
        if kind not in KINDS:
            raise BadRequestError(f"kind: expected one of {', '.join(KINDS)}, got {kind!r}")
        request = {"run_id": run_id, "step": step, "batch_ref": batch_ref, "model": model, "config": config}
        contract.validate("step-input", {k: v for k, v in request.items() if v is not None}, "step input")
        ref = parse_batch_ref(batch_ref, run_id, step)
        cfg = parse_step_config(config)
        spec = parse_model_spec(model) if model is not None else None
        step_dir = self.store.step_dir(run_id, step)  # validates run_id
        with self._lock:
            latest = self.store.latest_step(run_id)
            if step <= latest:
                return self._replay(run_id, step, kind, ref)
            if step > latest + 1:
                raise StepOutOfOrderError(
                    f"run {run_id}: step {step} was asked for but the latest applied step is {latest}; "
                    f"apply step {latest + 1} first (step n needs the state after step n-1)",
                    run_id=run_id,
                    step=step,
                )
            spec = self._run_spec(run_id, spec, latest)
            if self.ranks.world > 1:
                torch.distributed.barrier()  # run.json is written (rank 0) before any rank reads it
            records = load_batch(ref, grpo=kind == "grpo")
            try:
                state = self._load_state(run_id, latest, spec)
            except CheckpointMissingError:
                if self.store.latest_step(run_id) >= step:  # another worker applied it and pruned under us
                    return self._replay(run_id, step, kind, ref)
                raise
            started = time.monotonic()
            try:
                apply_step_config(state.optimizer, cfg)
                if kind == "grpo":
                    ref_policy = self._reference(run_id, spec) if cfg.kl_coef > 0 else None
                    metrics = grpo_update(
                        state.policy, state.optimizer, records, cfg, ref_policy, progress, self.ranks
                    )
                else:
                    metrics = sft_update(state.policy, state.optimizer, records, cfg, progress, self.ranks)
                metrics["duration_s"] = round(time.monotonic() - started, 3)
                metrics = {k: v if not isinstance(v, float) or math.isfinite(v) else None for k, v in metrics.items()}
                record = {
                    "run_id": run_id,
                    "step": step,
                    "kind": kind,
                    "batch_ref": ref,
                    "config": to_dict(cfg),
                    "model": to_dict(spec),
                    "metrics": metrics,
                    "applied_at": datetime.now(UTC).isoformat(),
                }
                progress("save", 0, 1)
                tokenizer = state.policy.tokenizer
                hf_tok = tokenizer.hf if isinstance(tokenizer, ChatTemplateTokenizer) else None
                merge = spec.lora is not None and spec.lora.merge
                if self.ranks.world > 1:
                    record, won = save_group_step(
                        self.store, run_id, step, state.policy.model, state.optimizer, record, hf_tok, self.ranks
                    )
                else:
                    record, won = save_when_space(
                        lambda: self.store.save_step(
                            run_id, step, state.policy.model, state.optimizer, record, hf_tok, merge_lora=merge
                        ),
                        lambda error, delay: _log_disk_wait(run_id, step, error, delay, progress),
                        disk_wait_s(),
                    )
                progress("save", 1, 1)
            except BaseException:
                self._state = None  # the in-memory weights may be half-updated: reload from disk next time
                raise
            if won:
                state.step = step
            else:
                self._state = None  # another worker applied this step first; its weights are the truth
            return _result(record, step_dir, replayed=not won)

    def register_run(self, run_id: str, model: Any) -> dict[str, Any]:
        """Records the run's model before (or without) any step, so its step 0 is served as that model
        (a study cell with no training examples is evaluated on its own base, not the policy server's
        ``--base``). Idempotent; once a step is applied, a different model is a StepMismatchError."""
        with self._lock:
            latest = self.store.latest_step(run_id)
            self._run_spec(run_id, parse_model_spec(model), latest)
            if latest == 0:  # the model may have changed: never step from weights loaded for the old one
                if self._state is not None and self._state.run_id == run_id:
                    self._state = None
                if self._ref is not None and self._ref[0] == run_id:
                    self._ref = None
        return self.latest_policy(run_id)

    def latest_policy(self, run_id: str) -> dict[str, Any]:
        """The newest applied step of a run and where its weights are (``None`` at step 0 of a tiny model)."""
        latest = self.store.latest_step(run_id)
        manifest = self.store.read_manifest(run_id)
        base = manifest["model"] if manifest else None
        if latest == 0:
            path = base["path"] if base and base["kind"] == "pretrained" else None
            return {
                "run_id": run_id,
                "step": 0,
                "model_path": path,
                "adapter_path": None,
                "base_model": base,
                "kind": None,
                "metrics": None,
            }
        record = self.store.read_record(run_id, latest) or {}
        adapter = self.store.adapter_dir(run_id, latest)
        return {
            "run_id": run_id,
            "step": latest,
            "model_path": str(self.store.weights_dir(run_id, latest)),
            "adapter_path": None if adapter is None else str(adapter),
            "base_model": base,
            "kind": record.get("kind"),
            "metrics": record.get("metrics"),
        }

    def save_checkpoint(self, run_id: str, step: int | None = None) -> dict[str, Any]:
        """Pins the weights of ``step`` (default: the latest) so retention never removes them."""
        latest = self.store.latest_step(run_id)
        step = latest if step is None else step
        if type(step) is not int or step < 1 or step > latest:
            raise BadRequestError(
                f"run {run_id}: cannot pin step {step!r}; applied steps are 1..{latest} (step 0 is the base model)",
                run_id=run_id,
                step=step if isinstance(step, int) else None,
            )
        path = self.store.pin(run_id, step)
        return {"run_id": run_id, "step": step, "model_path": str(path), "pinned": True}

    # --- internals ------------------------------------------------------------------------------
    def _replay(self, run_id: str, step: int, kind: str, ref: dict[str, Any]) -> dict[str, Any]:
        record = self.store.read_record(run_id, step)
        assert record is not None
        if record["kind"] != kind or canonical(record["batch_ref"]) != canonical(ref):
            raise StepMismatchError(
                f"run {run_id}: step {step} was applied as {record['kind']} with batch_ref "
                f"{canonical(record['batch_ref'])}; now asked as {kind} with {canonical(ref)}",
                run_id=run_id,
                step=step,
            )
        return _result(record, self.store.step_dir(run_id, step), replayed=True)

    def _run_spec(self, run_id: str, spec: ModelSpec | None, latest: int) -> ModelSpec:
        """The run's model spec: fixed once a step is applied; the first step must name it."""
        manifest = self.store.read_manifest(run_id)
        if latest >= 1 and manifest is not None:
            recorded = parse_model_spec(manifest["model"])
            if spec is not None and canonical(to_dict(spec)) != canonical(to_dict(recorded)):
                raise StepMismatchError(
                    f"run {run_id} trains model {canonical(to_dict(recorded))}; got {canonical(to_dict(spec))}",
                    run_id=run_id,
                )
            return recorded
        if spec is None:
            raise BadRequestError(f"run {run_id}: 'model' is required until the first step is applied", run_id=run_id)
        if self.ranks.rank != 0:
            return spec  # rank 0 writes run.json; the others were sent the same spec
        if manifest is None or canonical(manifest["model"]) != canonical(to_dict(spec)):
            if manifest is not None:  # no step was applied with the old spec: the new one replaces it
                (self.store.run_dir(run_id) / "run.json").unlink()
            self.store.ensure_manifest(run_id, {"run_id": run_id, "model": to_dict(spec)})
        return spec

    def _load_state(self, run_id: str, latest: int, spec: ModelSpec) -> _RunState:
        s = self._state
        if s is not None and s.run_id == run_id and s.step == latest:
            return s
        self._state = None
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        weights = adapter = None
        if latest > 0 and spec.lora is None:
            weights = str(self.store.weights_dir(run_id, latest))
        elif latest > 0:
            found = self.store.adapter_dir(run_id, latest)
            if found is None:
                raise CheckpointMissingError(
                    f"run {run_id}: the adapters of step {latest} are not on disk", run_id=run_id, step=latest
                )
            adapter = str(found)
        model = load_policy_model(master_spec(spec, self.ranks), weights, adapter, self.device, trainable=True)
        model, optimizer = prepare(model, spec, self.store, run_id, latest, self.device, self.ranks)
        policy = Policy(model, load_tokenizer(spec), self.device)
        self._state = _RunState(run_id, latest, policy, optimizer)
        return self._state

    def _reference(self, run_id: str, spec: ModelSpec) -> Policy:
        """pi_ref for the optional KL term: the step-0 policy of the run, frozen."""
        if self._ref is None or self._ref[0] != run_id:
            model = load_model(spec, None, self.device)
            model.requires_grad_(False)
            self._ref = (run_id, Policy(model, load_tokenizer(spec), self.device))
        return self._ref[1]
