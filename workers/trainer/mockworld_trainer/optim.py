"""Optimizer plumbing shared by the GRPO and SFT steps: AdamW, per-step learning rate, clipped update."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import torch

from .config import StepConfig

T = TypeVar("T")
Progress = Callable[[str, int, int], None]  # (phase, done, total), called between micro-batches


def no_progress(phase: str, done: int, total: int) -> None:
    """The default progress callback: does nothing."""


def make_optimizer(model: torch.nn.Module, cfg: StepConfig) -> torch.optim.Optimizer:
    """AdamW over every trainable parameter (VERL's actor optimizer); lr is set again at each step."""
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.999))


def apply_step_config(optimizer: torch.optim.Optimizer, cfg: StepConfig) -> None:
    """A step's config may change lr and weight decay (a schedule lives in the workflow, not here)."""
    for group in optimizer.param_groups:
        group["lr"] = cfg.lr
        group["weight_decay"] = cfg.weight_decay


def clip_and_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, max_grad_norm: float) -> float:
    """Clips the global gradient norm, applies one update, clears gradients; returns the pre-clip norm.

    A non-finite norm (inf or NaN gradients) skips the update, so one bad batch cannot poison the
    weights; the caller counts it from the returned norm.
    """
    total = torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    # Under FSDP the norm is a DTensor over every rank's shards; its full value is the global norm.
    norm = float(total.full_tensor() if hasattr(total, "full_tensor") else total)
    if math.isfinite(norm):
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return norm


def chunks(items: Sequence[T], size: int) -> Iterator[list[T]]:
    """Consecutive slices of at most ``size`` items."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def autocast(device: torch.device) -> torch.autocast:
    """bf16 autocast on CUDA (weights and optimizer state stay in their own dtype); a no-op on CPU."""
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")


def norm_metrics(norms: list[float]) -> dict[str, float | int | None]:
    """grad_norm (mean of the finite pre-clip norms, None if none) and skipped_updates (non-finite ones)."""
    finite = [n for n in norms if math.isfinite(n)]
    return {"grad_norm": sum(finite) / len(finite) if finite else None, "skipped_updates": len(norms) - len(finite)}
