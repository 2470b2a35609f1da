"""One GRPO trainer step over a rollout batch, as in the seed paper's App. A (GRPO in VERL).

The batch holds every rollout of the step (paper: 128 prompts x 16 rollouts). pi_old is the policy
before the step: its token log-probs are computed once, up front, without gradient (VERL recomputes
them the same way rather than trusting the serving engine's), at the rollouts' sampling temperature
and top-p (``cfg.temperature``, ``cfg.top_p``), as are pi_theta's: the ratio compares the policy with
the distribution the rollouts were drawn from. The groups are then split into
mini-batches of ``mini_batch_groups`` groups (paper: 16), each one optimizer update with the clipped
token-level loss of grpo.py, accumulated over micro-batches. The first update has ratio = 1; later
ones see the policy move, which is where the 0.2 / 0.28 clip acts.
"""

from __future__ import annotations

import statistics
import time

import torch

from .batches import Record
from .config import StepConfig
from .grpo import group_advantages, grpo_surrogate_loss
from .model import Encoded, Policy, truncate
from .optim import Progress, chunks, clip_and_step, no_progress, norm_metrics
from .packing import EMPTY, flat, micro_batch_logprobs, rank_micro_batches
from .ranks import ALONE, Ranks
from .throughput import reset_peak_memory, throughput_metrics


def encode_records(policy: Policy, records: list[Record], max_seq_len: int) -> list[Encoded]:
    """Tokenizes every transcript with its assistant loss mask, cut to ``max_seq_len``."""
    return [truncate(policy.tokenizer.encode(r.messages, r.tools), max_seq_len) for r in records]


@torch.no_grad()
def sequence_logprobs(
    policy: Policy,
    encoded: list[Encoded],
    micro_batch_size: int,
    progress: Progress,
    phase: str,
    temperature: float = 1.0,
    top_p: float = 1.0,
    *,
    pack_tokens: int = 0,
    ranks: Ranks = ALONE,
    groups: list[list[int]] | None = None,
) -> list[torch.Tensor | None]:
    """log pi(x_t | x_<t) of every transcript, without gradient, at the sampling ``temperature`` and
    ``top_p`` (model.token_logprobs): a list of (T_i - 1,) tensors, None for the transcripts another
    rank takes (each rank takes its share of every group, as the updates will; default: one group)."""
    out: list[torch.Tensor | None] = [None] * len(encoded)
    groups = groups if groups is not None else [list(range(len(encoded)))]
    micro_batches = rank_micro_batches(ranks, encoded, groups, micro_batch_size, pack_tokens)
    for n, micro in enumerate(micro_batches):
        items = [encoded[i] for i in micro] or [EMPTY]
        rows = micro_batch_logprobs(
            policy.model, items, policy.tokenizer.pad_id, policy.device, pack_tokens > 0, temperature, top_p
        )
        for i, row in zip(micro, rows, strict=False):
            out[i] = row
        progress(phase, n + 1, len(micro_batches))
    return out


def grpo_update(
    policy: Policy,
    optimizer: torch.optim.Optimizer,
    records: list[Record],
    cfg: StepConfig,
    ref_policy: Policy | None = None,
    progress: Progress = no_progress,
    ranks: Ranks = ALONE,
) -> dict[str, float | int | list[float] | None]:
    """Applies one GRPO step in place (this rank's share of it, under torchrun) and returns its metrics."""
    started = time.monotonic()
    reset_peak_memory(policy.device)
    model = policy.model
    model.eval()  # no dropout: pi_old and pi_theta are the same function at the first update
    encoded = encode_records(policy, records, cfg.max_seq_len)
    rewards = torch.tensor([r.reward for r in records], dtype=torch.float32)  # (N,)
    adv = group_advantages(rewards, [r.group_id for r in records], eps=cfg.adv_eps)
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        groups.setdefault(r.group_id, []).append(i)
    mini_batches = [[i for g in part for i in g] for part in chunks(list(groups.values()), cfg.mini_batch_groups)]

    sampled = (cfg.temperature, cfg.top_p)  # the distribution the rollouts were drawn from
    shared = {"pack_tokens": cfg.pack_tokens, "ranks": ranks, "groups": mini_batches}
    old_logp = sequence_logprobs(policy, encoded, cfg.micro_batch_size, progress, "old_logprobs", *sampled, **shared)
    ref_logp = None
    if cfg.kl_coef > 0:
        if ref_policy is None:
            raise ValueError("kl_coef > 0 needs the reference (step-0) policy")
        ref_policy.model.eval()
        ref_logp = sequence_logprobs(ref_policy, encoded, cfg.micro_batch_size, progress, "ref_logprobs", *sampled, **shared)

    totals = dict.fromkeys(("tokens", "clipped_low", "clipped_high", "ratio_sum", "approx_kl_sum", "ref_kl_sum"), 0.0)
    losses, norms = [], []
    optimizer.zero_grad(set_to_none=True)
    for u, mb_idx in enumerate(mini_batches):
        denominator = sum(sum(encoded[i].loss_mask[1:]) for i in mb_idx)  # loss tokens of the mini-batch, all ranks
        mb_loss = 0.0
        for micro in rank_micro_batches(ranks, encoded, [mb_idx], cfg.micro_batch_size, cfg.pack_tokens):
            items = [encoded[i] for i in micro] or [EMPTY]
            rows = micro_batch_logprobs(
                model, items, policy.tokenizer.pad_id, policy.device, cfg.pack_tokens > 0, *sampled
            )
            if not micro:  # an empty micro-batch: in the collectives, nothing in the loss
                (flat(rows).sum() * 0.0).backward()
                continue
            loss, stats = grpo_surrogate_loss(
                flat(rows),  # (1, sum T_i - 1) this micro-batch's transcripts end to end
                flat([old_logp[i] for i in micro]),
                flat([adv.advantages[i].expand(len(encoded[i].input_ids) - 1) for i in micro]).to(policy.device),
                flat([torch.tensor(encoded[i].loss_mask[1:]) for i in micro]).to(policy.device),
                eps_low=cfg.eps_low,
                eps_high=cfg.eps_high,
                denominator=denominator,
                ref_logp=None if ref_logp is None else flat([ref_logp[i] for i in micro]),
                kl_coef=cfg.kl_coef if ref_logp is not None else 0.0,
            )
            (loss * ranks.grad_scale).backward()
            mb_loss += float(loss.detach())
            for k in totals:
                totals[k] += getattr(stats, k)
        progress("update", u + 1, len(mini_batches))
        norms.append(clip_and_step(model, optimizer, cfg.max_grad_norm))
        losses.append(mb_loss)

    summed = ranks.sum([*losses, *totals.values()], policy.device)
    losses, totals = summed[: len(losses)], dict(zip(totals, summed[len(losses) :], strict=True))
    n_tok = max(totals["tokens"], 1)
    metrics: dict[str, float | int | list[float] | None] = {
        "loss": statistics.fmean(losses),
        "clip_frac": (totals["clipped_low"] + totals["clipped_high"]) / n_tok,
        "clip_frac_low": totals["clipped_low"] / n_tok,
        "clip_frac_high": totals["clipped_high"] / n_tok,
        "ratio_mean": totals["ratio_sum"] / n_tok,
        "approx_kl": totals["approx_kl_sum"] / n_tok,
        **norm_metrics(norms),
        "reward_mean": float(rewards.mean()),
        "reward_std": float(rewards.std(unbiased=False)),
        "adv_abs_mean": float(adv.advantages.abs().mean()),
        "num_samples": len(records),
        "num_groups": adv.num_groups,
        "zero_variance_groups": adv.zero_variance_groups,
        "num_tokens": int(totals["tokens"]),
        "num_updates": len(mini_batches),
        "truncated_samples": sum(e.truncated for e in encoded),
        **throughput_metrics(encoded, mini_batches, cfg, ranks, policy.device, started),
    }
    if ref_logp is not None:
        metrics["ref_kl"] = totals["ref_kl_sum"] / n_tok
    return metrics
