"""A run's trainable state in a trainer group (torchrun) or alone: building it and committing a step.

Building: the model (float32 master weights in a group), activation checkpointing when enabled,
FSDP2 when there are several ranks (shard.py), AdamW, and the state of the latest step: from its
DCP shards (``dcp/``, written by any number of ranks) or, for a step a single process wrote, from
``optimizer.pt``.

Committing a group's step (exactly once, as CheckpointStore.save_step does alone): rank 0 names a
temporary directory and sends the name to every rank; every rank writes its shards into it, rank 0
also the full weights for serving; every rank then reports whether its part is on disk, and only
when all did does rank 0 write record.json and rename the directory into place. A rank that dies
before that leaves no step (torchrun restarts the group, and the retried step starts again from
the state after the latest committed one); the others never write a record without its shards. A
save that fails (a full disk, a rename refused) fails on every rank at the same point, as
GroupSaveFailed: the group stays up and in step, and Temporal retries the step.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from .checkpoint import CheckpointStore, _fsync_tree, _fsync_tree_dir, _write_json
from .config import ModelSpec, PretrainedModelSpec, parse_step_config
from .errors import BadRequestError
from .optim import make_optimizer
from .ranks import Ranks
from .shard import (
    activation_checkpointing_enabled,
    checkpoint_layers,
    full_weights,
    load_sharded,
    load_single_process_optimizer,
    save_sharded,
    shard_model,
)


class GroupSaveFailed(RuntimeError):
    """A group's step was computed but not committed; raised on every rank at once (their outcome is
    agreed first), so the other ranks go on following rank 0 (group.follow) instead of exiting and
    making torchrun restart the group for an error a retry fixes."""


def master_spec(spec: ModelSpec, ranks: Ranks) -> ModelSpec:
    """The spec to load the weights with: in a group always float32 (master weights; bf16 is the
    compute dtype, compute_dtype); alone as the spec says."""
    if ranks.world > 1 and spec.lora is not None:
        raise BadRequestError("LoRA runs are trained by a single process for now; start the worker without torchrun")
    if ranks.world > 1 and isinstance(spec, PretrainedModelSpec):
        return dataclasses.replace(spec, dtype="float32")
    return spec


def compute_dtype(spec: ModelSpec, device: torch.device) -> torch.dtype:
    """bfloat16 compute for a bfloat16 model on a GPU, else float32 (CPU: gloo, and the tests' reference)."""
    if device.type == "cuda" and isinstance(spec, PretrainedModelSpec) and spec.dtype == "bfloat16":
        return torch.bfloat16
    return torch.float32


def prepare(
    model: torch.nn.Module,
    spec: ModelSpec,
    store: CheckpointStore,
    run_id: str,
    latest: int,
    device: torch.device,
    ranks: Ranks,
) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    """``model`` (built from the latest step's weights) made ready to train, and its AdamW with the
    latest step's state."""
    if activation_checkpointing_enabled(device):
        checkpoint_layers(model)
    if ranks.world > 1:
        shard_model(model, compute_dtype(spec, device))
    optimizer = make_optimizer(model, parse_step_config(None))
    if latest > 0:
        sharded = store.step_dir(run_id, latest) / "dcp"
        if sharded.is_dir():
            load_sharded(model, optimizer, sharded)
        elif ranks.world > 1:
            load_single_process_optimizer(model, optimizer, store.load_optimizer_state(run_id, latest, torch.device("cpu")))
        else:
            optimizer.load_state_dict(store.load_optimizer_state(run_id, latest, device))
    return model, optimizer


def _broadcast(value: Any) -> Any:
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def _save_full_weights(model: torch.nn.Module, weights: dict[str, torch.Tensor], directory: Path, tokenizer: Any) -> None:
    """save_pretrained of the gathered weights, named as the unwrapped model class (FSDP's wrapper
    class would otherwise be written into config.json's architectures, which serving engines read)."""
    if getattr(model.config, "tie_word_embeddings", False):  # gathered apart, saved once as save_pretrained does
        tied = getattr(model, "_tied_weights_keys", None) or {}
        weights = {k: v for k, v in weights.items() if k not in tied}
    model.save_pretrained(directory, state_dict=weights)  # type: ignore[operator]
    config_path = directory / "config.json"
    config = json.loads(config_path.read_text())
    config["architectures"] = [type(model).__name__.removeprefix("FSDP")]
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True))
    if tokenizer is not None:
        tokenizer.save_pretrained(directory)


def save_group_step(
    store: CheckpointStore,
    run_id: str,
    step: int,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    record: dict[str, Any],
    tokenizer: Any,
    ranks: Ranks,
) -> tuple[dict[str, Any], bool]:
    """Commits step ``step`` of a group (collective); returns (the record on disk, whether this call wrote it)."""
    run = store.run_dir(run_id)
    tmp = None
    if ranks.rank == 0:
        run.mkdir(parents=True, exist_ok=True)
        store._remove_stale_tmp(run)
        tmp = run / f".tmp-step-{step:08d}-{uuid.uuid4().hex}"
        tmp.mkdir()
    tmp = Path(_broadcast(None if tmp is None else str(tmp)))
    failure: BaseException | None = None
    try:
        save_sharded(model, optimizer, tmp / "dcp")
        weights = full_weights(model)
        if ranks.rank == 0:
            _save_full_weights(model, weights, tmp / "model", tokenizer)
            _fsync_tree(tmp)
    except Exception as e:  # noqa: BLE001 - reported to every rank below, then raised
        failure = e
    committed = ranks.sum([0.0 if failure else 1.0], torch.device("cpu"))[0]
    outcome: tuple[dict[str, Any], bool] | None = None
    if ranks.rank == 0:
        try:
            outcome = _commit(store, run, tmp, run_id, step, record) if committed == ranks.world else None
        except Exception as e:  # noqa: BLE001 - the others must hear of it before rank 0 raises it
            failure = failure or e
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    outcome = _broadcast(outcome)
    if outcome is None:
        why = f"{type(failure).__name__}: {failure}" if failure else "another rank could not write its shards"
        raise GroupSaveFailed(f"run {run_id} step {step} was not saved: {why}") from failure
    return outcome


def _commit(store: CheckpointStore, run: Path, tmp: Path, run_id: str, step: int, record: dict[str, Any]):
    """Rank 0, once every rank's shards are on disk: the record, then the rename that applies the step."""
    _write_json(tmp / "record.json", record)
    _fsync_tree(tmp)
    try:
        os.rename(tmp, store.step_dir(run_id, step))
    except OSError:
        if store.read_record(run_id, step) is None:
            raise
        return store.read_record(run_id, step), False
    _fsync_tree_dir(run)
    store.prune(run_id)
    return record, True
