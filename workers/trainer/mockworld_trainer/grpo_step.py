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

import torch

from .batches import Record
from .config import StepConfig
from .grpo import group_advantages, grpo_surrogate_loss
from .model import Encoded, Policy, pad_batch, token_logprobs, truncate
from .optim import Progress, autocast, chunks, clip_and_step, no_progress, norm_metrics


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
) -> list[torch.Tensor]:
    """log pi(x_t | x_<t) of every transcript, without gradient, at the sampling ``temperature`` and
    ``top_p`` (model.token_logprobs): a list of (T_i - 1,) tensors."""
    out: list[torch.Tensor] = []
    idx = list(range(len(encoded)))
    for n, mb in enumerate(chunks(idx, micro_batch_size)):
        ids, attn, _ = pad_batch([encoded[i] for i in mb], policy.tokenizer.pad_id, policy.device)  # (b, T)
        with autocast(policy.device):
            logp = token_logprobs(policy.model, ids, attn, temperature, top_p)  # (b, T-1)
        out += [logp[j, : len(encoded[i].input_ids) - 1].float() for j, i in enumerate(mb)]
        progress(phase, n + 1, -(-len(idx) // micro_batch_size))
    return out


def _pad_rows(rows: list[torch.Tensor], t: int) -> torch.Tensor:
    out = torch.zeros((len(rows), t), dtype=torch.float32, device=rows[0].device)  # (b, T-1)
    for j, r in enumerate(rows):
        out[j, : r.shape[0]] = r
    return out


def grpo_update(
    policy: Policy,
    optimizer: torch.optim.Optimizer,
    records: list[Record],
    cfg: StepConfig,
    ref_policy: Policy | None = None,
    progress: Progress = no_progress,
) -> dict[str, float | int]:
    """Applies one GRPO step in place and returns its metrics (plain numbers)."""
    model = policy.model
    model.eval()  # no dropout: pi_old and pi_theta are the same function at the first update
    encoded = encode_records(policy, records, cfg.max_seq_len)
    rewards = torch.tensor([r.reward for r in records], dtype=torch.float32)  # (N,)
    adv = group_advantages(rewards, [r.group_id for r in records], eps=cfg.adv_eps)
    sampled = (cfg.temperature, cfg.top_p)  # the distribution the rollouts were drawn from
    old_logp = sequence_logprobs(policy, encoded, cfg.micro_batch_size, progress, "old_logprobs", *sampled)
    ref_logp = None
    if cfg.kl_coef > 0:
        if ref_policy is None:
            raise ValueError("kl_coef > 0 needs the reference (step-0) policy")
        ref_policy.model.eval()
        ref_logp = sequence_logprobs(ref_policy, encoded, cfg.micro_batch_size, progress, "ref_logprobs", *sampled)

    groups: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        groups.setdefault(r.group_id, []).append(i)
    mini_batches = [[i for g in part for i in g] for part in chunks(list(groups.values()), cfg.mini_batch_groups)]

    totals = {
        "tokens": 0,
        "clipped_low": 0,
        "clipped_high": 0,
        "ratio_sum": 0.0,
        "approx_kl_sum": 0.0,
        "ref_kl_sum": 0.0,
    }
    losses, norms = [], []
    optimizer.zero_grad(set_to_none=True)
    for u, mb_idx in enumerate(mini_batches):
        denominator = sum(sum(encoded[i].loss_mask[1:]) for i in mb_idx)  # unmasked tokens in the mini-batch
        mb_loss = 0.0
        for micro in chunks(mb_idx, cfg.micro_batch_size):
            ids, attn, lmask = pad_batch([encoded[i] for i in micro], policy.tokenizer.pad_id, policy.device)  # (b, T)
            t = ids.shape[1] - 1
            with autocast(policy.device):
                logp = token_logprobs(model, ids, attn, *sampled)  # (b, T-1)
            loss, stats = grpo_surrogate_loss(
                logp,
                _pad_rows([old_logp[i] for i in micro], t),
                adv.advantages[micro].to(policy.device),  # (b,)
                lmask[:, 1:],  # (b, T-1) the mask of the predicted token
                eps_low=cfg.eps_low,
                eps_high=cfg.eps_high,
                denominator=denominator,
                ref_logp=None if ref_logp is None else _pad_rows([ref_logp[i] for i in micro], t),
                kl_coef=cfg.kl_coef if ref_logp is not None else 0.0,
            )
            loss.backward()
            mb_loss += float(loss.detach())
            for k in totals:
                totals[k] += getattr(stats, k)
            progress("update", u + 1, len(mini_batches))
        norms.append(clip_and_step(model, optimizer, cfg.max_grad_norm))
        losses.append(mb_loss)

    n_tok = max(totals["tokens"], 1)
    metrics: dict[str, float | int] = {
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
        "num_tokens": totals["tokens"],
        "num_updates": len(mini_batches),
        "truncated_samples": sum(e.truncated for e in encoded),
    }
    if ref_logp is not None:
        metrics["ref_kl"] = totals["ref_kl_sum"] / n_tok
    return metrics
