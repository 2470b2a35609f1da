"""Supervised fine-tuning step: masked token-level cross-entropy on assistant tokens.

For the scaling studies (seed 002: an SFT grid over synthetic datasets) and for a format-learning
phase that the seed paper skips (App. A: Qwen3 already follows the tool format). Only the tokens the
assistant produced carry loss, exactly the loss mask of model.py, so user, tool and system turns are
context. One step is one optimizer update over the whole batch, accumulated over micro-batches.
"""

from __future__ import annotations

import torch

from .batches import Record
from .config import StepConfig
from .grpo_step import encode_records
from .model import Policy, pad_batch, token_logprobs
from .optim import Progress, autocast, chunks, clip_and_step, no_progress, norm_metrics


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
) -> dict[str, float | int]:
    """Applies one SFT update in place; ``loss`` is the batch's token-mean NLL before the update."""
    model = policy.model
    model.eval()  # no dropout, as in the GRPO step
    encoded = encode_records(policy, records, cfg.max_seq_len)
    denominator = sum(sum(e.loss_mask[1:]) for e in encoded)  # assistant tokens in the batch
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    micro_batches = list(chunks(list(range(len(encoded))), cfg.micro_batch_size))
    for n, micro in enumerate(micro_batches):
        ids, attn, lmask = pad_batch([encoded[i] for i in micro], policy.tokenizer.pad_id, policy.device)  # (b, T)
        with autocast(policy.device):
            logp = token_logprobs(model, ids, attn)  # (b, T-1)
        loss = masked_nll(logp, lmask[:, 1:], denominator)
        loss.backward()
        total += float(loss.detach())
        progress("update", n + 1, len(micro_batches))
    norm = clip_and_step(model, optimizer, cfg.max_grad_norm)
    return {
        "loss": total,
        **norm_metrics([norm]),
        "num_samples": len(records),
        "num_tokens": denominator,
        "num_updates": 1,
        "truncated_samples": sum(e.truncated for e in encoded),
    }
