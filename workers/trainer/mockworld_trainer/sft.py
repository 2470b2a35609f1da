"""Supervised fine-tuning step: masked token-level cross-entropy on assistant tokens.

For the scaling studies (seed 002: an SFT grid over synthetic datasets) and for a format-learning
phase that the seed paper skips (App. A: Qwen3 already follows the tool format). Only the tokens the
assistant produced carry loss, exactly the loss mask of model.py, so user, tool and system turns are
context. One step is one optimizer update over the whole batch, accumulated over micro-batches.
"""

from __future__ import annotations

import time

import torch

from .batches import Record
from .config import StepConfig
from .errors import BadRequestError
from .grpo_step import encode_records
from .model import Policy
from .optim import Progress, clip_and_step, no_progress, norm_metrics
from .packing import EMPTY, flat, micro_batch_logprobs, rank_micro_batches
from .ranks import ALONE, Ranks
from .throughput import reset_peak_memory, throughput_metrics


def masked_nll(
    logp: torch.Tensor,  # (B, T) log pi_theta(x_t | x_<t)
    loss_mask: torch.Tensor,  # (B, T) 1 on assistant tokens
    denominator: float | None = None,
) -> torch.Tensor:
    """L = - sum_{b,t} m_bt log pi(x_bt) / max(1, denominator); denominator defaults to sum(m)."""
    mask = loss_mask.bool()
    n = int(mask.sum()) if denominator is None else denominator
    return -torch.where(mask, logp, torch.zeros_like(logp)).sum() / max(float(n), 1.0)


def sft_update(
    policy: Policy,
    optimizer: torch.optim.Optimizer,
    records: list[Record],
    cfg: StepConfig,
    progress: Progress = no_progress,
    ranks: Ranks = ALONE,
) -> dict[str, float | int | list[float] | None]:
    """Applies one SFT update in place (this rank's share under torchrun); ``loss`` is the batch's
    token-mean NLL before the update."""
    started = time.monotonic()
    reset_peak_memory(policy.device)
    model = policy.model
    model.eval()  # no dropout, as in the GRPO step
    encoded = encode_records(policy, records, cfg.max_seq_len)
    denominator = sum(sum(e.loss_mask[1:]) for e in encoded)  # assistant tokens in the batch
    if denominator == 0:
        # Every record was cut before its first assistant token: an update would train nothing (and
        # still decay the weights). The same on every rank, so a group refuses it together.
        cut = sum(e.truncated for e in encoded)
        raise BadRequestError(
            f"no assistant token within max_seq_len {cfg.max_seq_len} in any of the batch's {len(records)} "
            f"records ({cut} cut at it): raise max_seq_len (the spec's maxSeqLen) above the prompt and tools"
        )
    everything = [list(range(len(encoded)))]
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    micro_batches = rank_micro_batches(ranks, encoded, everything, cfg.micro_batch_size, cfg.pack_tokens)
    for n, micro in enumerate(micro_batches):
        items = [encoded[i] for i in micro] or [EMPTY]
        rows = micro_batch_logprobs(model, items, policy.tokenizer.pad_id, policy.device, cfg.pack_tokens > 0)
        if micro:
            mask = flat([torch.tensor(encoded[i].loss_mask[1:]) for i in micro]).to(policy.device)
            loss = masked_nll(flat(rows), mask, denominator)
            total += float(loss.detach())
        else:  # an empty micro-batch: in the collectives, nothing in the loss
            loss = flat(rows).sum() * 0.0
        (loss * ranks.grad_scale).backward()
        progress("update", n + 1, len(micro_batches))
    norm = clip_and_step(model, optimizer, cfg.max_grad_norm)
    return {
        "loss": ranks.sum([total], policy.device)[0],
        **norm_metrics([norm]),
        "num_samples": len(records),
        "num_tokens": denominator,
        "num_updates": 1,
        "truncated_samples": sum(e.truncated for e in encoded),
        **throughput_metrics(encoded, everything, cfg, ranks, policy.device, started),
    }
