"""FSDP2 over the policy and sharded checkpoints, for a trainer group under torchrun (group.py).

- ``fully_shard`` on every decoder layer, then on the whole model: parameters, gradients and AdamW
  state are split across the ranks; a layer's weights are gathered only while it computes.
- Mixed precision: parameters (the master weights) and optimizer state stay float32; compute runs in
  ``compute_dtype`` (bfloat16 on GPUs) with gradients reduced in float32 (``MixedPrecisionPolicy``).
  On CPU the group computes in float32: gloo reduces float32, and the tests compare with the
  single-process step, which is float32 there.
- Activation checkpointing: each decoder layer's activations are recomputed in the backward instead
  of kept (torch.utils.checkpoint, non-reentrant), so a 13,000-token transcript keeps one layer's
  activations at a time. The layer's ``forward`` is wrapped in place, so parameter names (and so
  checkpoints) are unchanged, and it works in eval mode, which the steps use (no dropout).
- Checkpoints: ``torch.distributed.checkpoint`` (DCP) writes each rank's shards of the weights and
  AdamW state into ``step-N/dcp/``; DCP reshards on load, so a step written by 2 ranks is resumed by
  1 or by 8. Rank 0 also writes the full weights (``step-N/model/``) for serving.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_optimizer_state_dict,
    set_state_dict,
)
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.utils.checkpoint import checkpoint


def activation_checkpointing_enabled(device: torch.device) -> bool:
    """MOCKWORLD_TRAINER_ACTIVATION_CHECKPOINTING (1/0); default on for GPUs, off on CPU."""
    value = os.environ.get("MOCKWORLD_TRAINER_ACTIVATION_CHECKPOINTING", "")
    return value == "1" if value else device.type == "cuda"


def decoder_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The transformer blocks (``...DecoderLayer`` modules, as transformers names them)."""
    return [m for m in model.modules() if type(m).__name__.endswith("DecoderLayer")]


def checkpoint_layers(model: torch.nn.Module) -> int:
    """Wraps each decoder layer's forward in a non-reentrant checkpoint; returns how many."""
    layers = decoder_layers(model)
    for layer in layers:
        layer.forward = functools.partial(checkpoint, layer.forward, use_reentrant=False)  # type: ignore[method-assign]
    return len(layers)


def shard_model(model: torch.nn.Module, compute_dtype: torch.dtype) -> torch.nn.Module:
    """FSDP2 over ``model`` (float32 parameters), computing in ``compute_dtype``."""
    mp = MixedPrecisionPolicy(param_dtype=compute_dtype, reduce_dtype=torch.float32)
    for layer in decoder_layers(model):
        fully_shard(layer, mp_policy=mp)
    fully_shard(model, mp_policy=mp)
    return model


def save_sharded(model: torch.nn.Module, optimizer: torch.optim.Optimizer, directory: Path) -> None:
    """Every rank's shards of weights and AdamW state (collective)."""
    model_sd, optim_sd = get_state_dict(model, optimizer)
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=str(directory))


def load_sharded(model: torch.nn.Module, optimizer: torch.optim.Optimizer, directory: Path) -> None:
    """Weights and AdamW state from a DCP checkpoint written by any number of ranks (collective when
    sharded; a single process reads it whole)."""
    model_sd, optim_sd = get_state_dict(model, optimizer)  # initializes AdamW state to load into
    state = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id=str(directory))
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])


def full_weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The unsharded weights on rank 0's CPU (empty elsewhere); collective."""
    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def load_single_process_optimizer(model: torch.nn.Module, optimizer: torch.optim.Optimizer, saved: dict[str, Any]) -> None:
    """A single process's ``optimizer.pt`` (AdamW state keyed by parameter index) into a sharded
    optimizer: the indices are the trainable parameters in ``named_parameters`` order, whose names
    FSDP keeps."""
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    state = {names[i]: value for i, value in saved["state"].items()}
    groups = [{**g, "params": [names[i] for i in g["params"]]} for g in saved["param_groups"]]
    set_optimizer_state_dict(
        model, optimizer, {"state": state, "param_groups": groups}, options=StateDictOptions(full_state_dict=True)
    )
