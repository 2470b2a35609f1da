"""GRPO maths: group-normalized advantages and the clipped surrogate loss. Pure functions, no I/O.

GRPO (Shao et al., 2024, "DeepSeekMath") replaces PPO's value baseline by the statistics of a group
of G rollouts of the same task: A_i = (r_i - mean(r)) / (std(r) + eps), shared by every token of
rollout i. The seed paper (Mock Worlds, Real Skills, §3.1 eq. 1-2 and App. A) trains with GRPO in
VERL with the clipping ratio "constrained between 0.2 and 0.28", i.e. the asymmetric clip
ratio in [1 - eps_low, 1 + eps_high] with eps_low = 0.2, eps_high = 0.28, and aggregates the loss
over tokens. Its §3.1 is about groups whose advantages have no variance: they carry no gradient
(eq. 2), so they are counted and reported here rather than hidden.

Symbols: r reward, A advantage, pi_theta the policy being trained, pi_old the policy that produced
the rollouts (the weights before this step), ratio = pi_theta / pi_old per token.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import torch

LOG_RATIO_LIMIT = 20.0  # log-ratios are clamped to +-20 before exp, so a stale token cannot overflow


@dataclass(frozen=True)
class GroupAdvantages:
    """Per-rollout advantages and how many groups carried no learning signal."""

    advantages: torch.Tensor  # (N,) float32, A_i
    num_groups: int
    zero_variance_groups: int  # groups with std(r) < eps (including groups of one rollout): A_i = 0


def group_advantages(rewards: torch.Tensor, group_ids: Sequence[Hashable], eps: float = 1e-6) -> GroupAdvantages:
    """A_i = (r_i - mean_g(r)) / (std_g(r) + eps) within each group g of rollouts of one task.

    std is the sample (Bessel-corrected) standard deviation, as torch.std in VERL and TRL. A group
    whose std is below ``eps`` (all rewards equal, or a single rollout) has zero variance: its
    advantages are exactly zero and it is counted in ``zero_variance_groups`` (paper §3.1, eq. 1).
    """
    r = rewards.detach().to(torch.float64)  # (N,)
    if r.ndim != 1 or r.shape[0] != len(group_ids):
        raise ValueError(f"rewards {tuple(r.shape)} and group_ids ({len(group_ids)}) must be (N,) and N long")
    members: dict[Hashable, list[int]] = {}
    for i, g in enumerate(group_ids):
        members.setdefault(g, []).append(i)
    advantages = torch.zeros_like(r)  # (N,)
    zero_variance = 0
    for idx in members.values():
        r_g = r[idx]  # (G,)
        std = r_g.std(unbiased=True) if len(idx) > 1 else torch.tensor(0.0, dtype=r.dtype)
        if not bool(std >= eps):
            zero_variance += 1
            continue
        advantages[idx] = (r_g - r_g.mean()) / (std + eps)
    return GroupAdvantages(advantages.to(torch.float32), len(members), zero_variance)


@dataclass(frozen=True)
class SurrogateStats:
    """Token counts of one loss call, summed so that micro-batches aggregate exactly."""

    tokens: int  # unmasked (policy-generated) tokens
    clipped_low: int  # A < 0 and ratio < 1 - eps_low: the clipped term wins, no gradient
    clipped_high: int  # A > 0 and ratio > 1 + eps_high: the clipped term wins, no gradient
    ratio_sum: float  # sum of ratio over unmasked tokens
    approx_kl_sum: float  # sum of k3 = (ratio - 1) - log ratio, an estimate of KL(pi_old || pi_theta)
    ref_kl_sum: float  # sum of k3 KL(pi_theta || pi_ref) when a reference is given, else 0


def grpo_surrogate_loss(
    logp: torch.Tensor,  # (B, T) log pi_theta(a_t | s_t), with grad
    old_logp: torch.Tensor,  # (B, T) log pi_old(a_t | s_t)
    advantages: torch.Tensor,  # (B,) per rollout or (B, T) per token
    loss_mask: torch.Tensor,  # (B, T) 1 on policy-generated (assistant) tokens, 0 elsewhere
    *,
    eps_low: float = 0.2,
    eps_high: float = 0.28,
    denominator: float | None = None,
    ref_logp: torch.Tensor | None = None,  # (B, T) log pi_ref, only when kl_coef > 0
    kl_coef: float = 0.0,
) -> tuple[torch.Tensor, SurrogateStats]:
    """Token-level GRPO loss with the asymmetric clip (paper App. A: 0.2 / 0.28).

        L = - sum_{i,t} m_it * min(ratio_it * A_i, clip(ratio_it, 1 - eps_low, 1 + eps_high) * A_i)
            / max(1, denominator)              [+ kl_coef * k3(pi_theta || pi_ref) per token]

    ``denominator`` is the number of unmasked tokens in the whole mini-batch (default: in this call),
    so micro-batches that each call this with the mini-batch's count add up to the mini-batch loss.
    Masked positions are replaced before any arithmetic (never multiplied by 0), so whatever old
    log-probs, advantages or targets they hold, they contribute exactly zero loss and zero gradient.
    """
    mask = loss_mask.bool()  # (B, T)
    if advantages.ndim == 1:
        advantages = advantages[:, None].expand_as(logp)  # (B, T)
    logp_detached = logp.detach()
    old = torch.where(mask, old_logp.to(logp.dtype), logp_detached)  # (B, T)
    adv = torch.where(mask, advantages.to(logp.dtype), torch.zeros_like(logp))  # (B, T)
    log_ratio = (logp - old).clamp(-LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)  # (B, T)
    ratio = torch.exp(log_ratio)  # (B, T)
    clipped_ratio = ratio.clamp(1.0 - eps_low, 1.0 + eps_high)  # (B, T)
    per_token = -torch.minimum(ratio * adv, clipped_ratio * adv)  # (B, T)
    ref_kl = torch.zeros_like(logp)
    if kl_coef > 0:
        if ref_logp is None:
            raise ValueError("kl_coef > 0 needs ref_logp")
        d = torch.where(mask, ref_logp.to(logp.dtype), logp_detached) - logp  # (B, T) log pi_ref - log pi_theta
        ref_kl = torch.exp(d) - d - 1.0  # (B, T) k3 estimator, >= 0
        per_token = per_token + kl_coef * ref_kl
    n = int(mask.sum()) if denominator is None else denominator
    loss = torch.where(mask, per_token, torch.zeros_like(per_token)).sum() / max(float(n), 1.0)
    with torch.no_grad():
        ratio_d = ratio.detach()
        stats = SurrogateStats(
            tokens=int(mask.sum()),
            clipped_low=int((mask & (adv < 0) & (ratio_d < 1.0 - eps_low)).sum()),
            clipped_high=int((mask & (adv > 0) & (ratio_d > 1.0 + eps_high)).sum()),
            ratio_sum=float(ratio_d[mask].sum()),
            approx_kl_sum=float(((ratio_d - 1.0) - log_ratio.detach())[mask].sum()),
            ref_kl_sum=float(ref_kl.detach()[mask].sum()),
        )
    return loss, stats
