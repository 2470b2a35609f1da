"""A step's throughput and memory, reported with its metrics.

- ``tokens_per_s``: transcript tokens of the batch (every rank's share) per second of the step's
  update (forwards for pi_old, the optimizer updates; loading and saving excluded).
- ``padding_fraction``: share of the forward positions that were padding (0 with packing).
- ``peak_memory_bytes`` / ``peak_memory_bytes_per_rank``: on CUDA the peak of memory allocated by
  tensors during the step (torch.cuda.max_memory_allocated, reset when the step starts); on CPU the
  process's peak resident set size since it started (getrusage), which no step can reset, so an
  upper bound of the step's own.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Sequence

import torch

from .config import StepConfig
from .model import Encoded
from .packing import forward_positions, rank_micro_batches
from .ranks import Ranks


def reset_peak_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)  # Linux reports KiB, macOS bytes


def throughput_metrics(
    encoded: Sequence[Encoded],
    groups: Sequence[Sequence[int]],
    cfg: StepConfig,
    ranks: Ranks,
    device: torch.device,
    started: float,
) -> dict[str, float | int | list[float] | None]:
    """tokens_per_s, padding_fraction, peak memory (max and per rank) of a step that began at ``started``."""
    elapsed = time.monotonic() - started
    tokens = sum(len(e.input_ids) for e in encoded)
    mine = rank_micro_batches(ranks, encoded, groups, cfg.micro_batch_size, cfg.pack_tokens)
    positions = ranks.sum([forward_positions(encoded, [m for m in mine if m], cfg.pack_tokens > 0)], device)[0]
    peaks = ranks.gather(float(peak_memory_bytes(device)), device)
    return {
        "tokens_per_s": tokens / elapsed if elapsed > 0 else None,
        "padding_fraction": 1.0 - tokens / positions if positions else 0.0,
        "peak_memory_bytes": int(max(peaks)),
        "peak_memory_bytes_per_rank": [int(p) for p in peaks],
        "world_size": ranks.world,
    }
