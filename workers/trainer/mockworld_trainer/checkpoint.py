"""Checkpoints per (run_id, step) on a local (or shared) directory, written atomically.

Layout under MOCKWORLD_CHECKPOINT_DIR (default $MOCKWORLD_HOME/checkpoints, ~/.mockworld/checkpoints):

    <run>/run.json                    model spec of the run, fixed by its first step
    <run>/step-00000003/record.json   the applied step: kind, batch_ref, config, metrics (kept forever)
    <run>/step-00000003/model/        save_pretrained weights + config (+ tokenizer): servable as is
                                      (a LoRA run: the merged weights, only with ``merge``)
    <run>/step-00000003/adapter/      a LoRA run's adapters (peft layout), loadable by vLLM / SGLang by name
    <run>/step-00000003/optimizer.pt  AdamW state, to continue on any node (a single process's step)
    <run>/step-00000003/dcp/          a trainer group's step: every rank's shards of weights and AdamW
                                      state (torch.distributed.checkpoint), resumable on any world size
    <run>/step-00000003/pinned        present when saveCheckpoint pinned the step

A step directory is filled under a temporary name, fsynced, then renamed into place: it either exists
whole or not at all, and of two racing writers exactly one rename wins. Retention keeps the weights of
the newest MOCKWORLD_CHECKPOINT_KEEP steps (default 2) and of pinned steps; older steps keep only
record.json, which is all that answering a repeated request needs.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import time
import uuid
from pathlib import Path
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import quote

import torch

from .errors import BadRequestError, CheckpointMissingError
from .lora import is_lora, merged, save_adapters

STALE_TMP_S = 6 * 3600  # a temporary dir this old belongs to a writer that died


def mockworld_home() -> Path:
    """The state directory: MOCKWORLD_HOME, else ~/.mockworld (as schemas/environment.ts resolves it)."""
    return Path(os.environ.get("MOCKWORLD_HOME") or os.path.join(os.path.expanduser("~"), ".mockworld"))


def default_root() -> Path:
    explicit = os.environ.get("MOCKWORLD_CHECKPOINT_DIR")
    if explicit:
        return Path(explicit)
    return mockworld_home() / "checkpoints"


def _fsync_tree(path: Path) -> None:
    for dirpath, _, files in os.walk(path):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as f:
                os.fsync(f.fileno())
        fd = os.open(dirpath, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_json(path: Path, obj: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())


T = TypeVar("T")
DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


def is_disk_full(error: BaseException) -> bool:
    """ENOSPC or a quota, however the writer reports it (OSError, or an error chained from one)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in DISK_FULL_ERRNOS:
            return True
        if "No space left on device" in str(seen) or "Disk quota exceeded" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def disk_wait_s() -> float:
    """How long a save waits for space (MOCKWORLD_CHECKPOINT_DISK_WAIT_S, default 600 s)."""
    return float(os.environ.get("MOCKWORLD_CHECKPOINT_DISK_WAIT_S", "600"))


def save_when_space(
    save: Callable[[], T],
    on_wait: Callable[[BaseException, float], None],
    wait_s: float,
) -> T:
    """Runs ``save``; while it fails for want of space, waits (1 s doubling to 30 s) and runs it again.

    The step it saves is computed once: a full disk costs the wait, not a recomputed step per retried
    attempt. Past ``wait_s`` the last error is raised and the activity's retry policy takes over.
    """
    deadline = time.monotonic() + wait_s
    delay = 1.0
    while True:
        try:
            return save()
        except Exception as e:
            if not is_disk_full(e) or time.monotonic() + delay > deadline:
                raise
            on_wait(e, delay)
            time.sleep(delay)
            delay = min(delay * 2, 30.0)


class CheckpointStore:
    """Reads and writes the checkpoints of every run under one root directory."""

    def __init__(self, root: str | os.PathLike[str] | None = None, keep_last: int | None = None) -> None:
        self.root = Path(root) if root is not None else default_root()
        keep = keep_last if keep_last is not None else int(os.environ.get("MOCKWORLD_CHECKPOINT_KEEP", "2"))
        if keep < 1:
            raise BadRequestError(
                "MOCKWORLD_CHECKPOINT_KEEP must be >= 1: the latest step's weights are needed to go on"
            )
        self.keep_last = keep

    # --- paths ---------------------------------------------------------------------------------
    def run_dir(self, run_id: str) -> Path:
        if not run_id or run_id in (".", ".."):
            raise BadRequestError(f"run_id: expected a non-empty id, got {run_id!r}")
        return self.root / quote(run_id, safe="-_.")

    def step_dir(self, run_id: str, step: int) -> Path:
        return self.run_dir(run_id) / f"step-{step:08d}"

    # --- run manifest --------------------------------------------------------------------------
    def read_manifest(self, run_id: str) -> dict[str, Any] | None:
        path = self.run_dir(run_id) / "run.json"
        return json.loads(path.read_text()) if path.exists() else None

    def ensure_manifest(self, run_id: str, manifest: dict[str, Any]) -> dict[str, Any]:
        """Writes run.json if absent (create-if-absent via link) and returns the one on disk."""
        run = self.run_dir(run_id)
        run.mkdir(parents=True, exist_ok=True)
        tmp = run / f".tmp-run-{uuid.uuid4().hex}.json"
        _write_json(tmp, manifest)
        try:
            os.link(tmp, run / "run.json")
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
        return self.read_manifest(run_id)  # type: ignore[return-value]

    # --- steps ---------------------------------------------------------------------------------
    def applied_steps(self, run_id: str) -> list[int]:
        run = self.run_dir(run_id)
        if not run.is_dir():
            return []
        steps = []
        for d in run.iterdir():
            if d.name.startswith("step-") and (d / "record.json").exists():
                steps.append(int(d.name[5:]))
        return sorted(steps)

    def latest_step(self, run_id: str) -> int:
        """The newest applied step; 0 when none has been (step 0 is the initial policy)."""
        steps = self.applied_steps(run_id)
        return steps[-1] if steps else 0

    def read_record(self, run_id: str, step: int) -> dict[str, Any] | None:
        path = self.step_dir(run_id, step) / "record.json"
        return json.loads(path.read_text()) if path.exists() else None

    def adapter_dir(self, run_id: str, step: int) -> Path | None:
        """The step's LoRA adapters, or None (a run that trains every weight, or pruned)."""
        path = self.step_dir(run_id, step) / "adapter"
        return path if (path / "adapter_config.json").exists() else None

    def weights_dir(self, run_id: str, step: int) -> Path:
        """The step's servable weights: ``model/`` (full or merged), else a LoRA run's ``adapter/``."""
        path = self.step_dir(run_id, step) / "model"
        if not (path / "config.json").exists() and (adapter := self.adapter_dir(run_id, step)) is not None:
            return adapter
        if not (path / "config.json").exists():
            raise CheckpointMissingError(
                f"run {run_id}: the weights of step {step} are not on disk (pruned: only the newest "
                f"{self.keep_last} steps and pinned steps keep weights; pin with trainer.saveCheckpoint "
                "or raise MOCKWORLD_CHECKPOINT_KEEP)",
                run_id=run_id,
                step=step,
            )
        return path

    def save_step(
        self,
        run_id: str,
        step: int,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        record: dict[str, Any],
        tokenizer: Any | None = None,
        merge_lora: bool = False,
    ) -> tuple[dict[str, Any], bool]:
        """Atomically writes step ``step``; returns (the record on disk, whether this call wrote it).

        A LoRA model writes its adapters, and its merged weights only when ``merge_lora``.
        """
        run = self.run_dir(run_id)
        run.mkdir(parents=True, exist_ok=True)
        self._remove_stale_tmp(run)
        tmp = run / f".tmp-step-{step:08d}-{uuid.uuid4().hex}"
        tmp.mkdir()
        try:
            if is_lora(model):
                save_adapters(model, tmp / "adapter")  # type: ignore[arg-type]
            if not is_lora(model) or merge_lora:
                full = merged(model) if is_lora(model) else model  # type: ignore[arg-type]
                full.save_pretrained(tmp / "model")  # safetensors + config.json
                if tokenizer is not None:
                    tokenizer.save_pretrained(tmp / "model")
            torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
            _write_json(tmp / "record.json", record)
            _fsync_tree(tmp)
            try:
                os.rename(tmp, self.step_dir(run_id, step))
            except OSError:
                if self.read_record(run_id, step) is None:
                    raise
                return self.read_record(run_id, step), False  # type: ignore[return-value]
            _fsync_tree_dir(run)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        self.prune(run_id)
        return record, True

    def load_optimizer_state(self, run_id: str, step: int, device: torch.device) -> dict[str, Any]:
        path = self.step_dir(run_id, step) / "optimizer.pt"
        if not path.exists():
            raise CheckpointMissingError(
                f"run {run_id}: optimizer state of step {step} is not on disk", run_id=run_id, step=step
            )
        return torch.load(path, map_location=device, weights_only=True)

    def pin(self, run_id: str, step: int) -> Path:
        """Exempts a step's weights from retention; returns its model directory."""
        path = self.weights_dir(run_id, step)
        (self.step_dir(run_id, step) / "pinned").touch()
        return path

    def prune(self, run_id: str) -> None:
        """Drops optimizer state of steps older than the newest ``keep_last``, and their weights unless pinned."""
        steps = self.applied_steps(run_id)
        for step in steps[: -self.keep_last]:
            d = self.step_dir(run_id, step)
            (d / "optimizer.pt").unlink(missing_ok=True)  # only the latest step's is ever resumed from
            shutil.rmtree(d / "dcp", ignore_errors=True)  # a trainer group's shards of weights and AdamW state
            if not (d / "pinned").exists():
                shutil.rmtree(d / "model", ignore_errors=True)
                shutil.rmtree(d / "adapter", ignore_errors=True)

    def _remove_stale_tmp(self, run: Path) -> None:
        now = time.time()
        for d in run.glob(".tmp-step-*"):
            try:
                if now - d.stat().st_mtime > STALE_TMP_S:
                    shutil.rmtree(d, ignore_errors=True)
            except FileNotFoundError:
                pass


def _fsync_tree_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
