"""GRPO maths on hand-computed numbers: advantages, the asymmetric clip, masking, aggregation."""

from __future__ import annotations

import math

import pytest
import torch

from mockworld_trainer.grpo import group_advantages, grpo_surrogate_loss


def test_advantages_are_normalized_within_each_group_with_the_sample_std():
    # group a: r = [1, 0, 0, 1], mean 0.5, sample std sqrt(4 * 0.25 / 3) = 0.57735 -> A = +-0.5 / 0.57735 = +-0.86603
    # group b: r = [0.2, 0.8], mean 0.5, sample std sqrt(2 * 0.09 / 1) = 0.42426 -> A = -+0.3 / 0.42426 = -+0.70711
    rewards = torch.tensor([1.0, 0.0, 0.2, 0.0, 1.0, 0.8])
    out = group_advantages(rewards, ["a", "a", "b", "a", "a", "b"], eps=1e-6)
    expected = torch.tensor([0.866025, -0.866025, -0.707107, -0.866025, 0.866025, 0.707107])
    assert torch.allclose(out.advantages, expected, atol=1e-5)
    assert (out.num_groups, out.zero_variance_groups) == (2, 0)


def test_zero_variance_groups_get_exactly_zero_advantage_and_are_counted():
    # "same": all rewards equal; "alone": a single rollout (std undefined); "mixed": a normal group
    rewards = torch.tensor([0.5, 0.5, 0.5, 1.0, 0.0, 1.0])
    out = group_advantages(rewards, ["same", "same", "same", "alone", "mixed", "mixed"])
    assert out.advantages[:4].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert out.advantages[4] < 0 < out.advantages[5]
    assert (out.num_groups, out.zero_variance_groups) == (3, 2)


def test_a_group_whose_std_is_float_noise_counts_as_zero_variance():
    rewards = torch.tensor([0.3, 0.1 + 0.2, 0.3])  # 0.1 + 0.2 = 0.30000000000000004
    out = group_advantages(rewards, ["g"] * 3, eps=1e-6)
    assert out.zero_variance_groups == 1 and out.advantages.abs().sum() == 0


def test_the_clipped_surrogate_matches_a_hand_computed_case():
    # Seven unmasked tokens of one rollout plus one masked token; eps_low = 0.2, eps_high = 0.28,
    # old log-prob 0, so ratio = exp(logp). Per token: min(ratio * A, clip(ratio, 0.8, 1.28) * A)
    #   t0 A=+1 ratio 1.50 -> min(1.50, 1.28) = 1.28  clipped high, no gradient
    #   t1 A=+1 ratio 0.50 -> min(0.50, 0.80) = 0.50  unclipped: d/dlogp = A * ratio = 0.5
    #   t2 A=-1 ratio 0.50 -> min(-0.50, -0.80) = -0.80 clipped low, no gradient
    #   t3 A=-1 ratio 1.50 -> min(-1.50, -1.28) = -1.50 unclipped: d/dlogp = -1.5
    #   t4 A=+2 ratio 1.10 -> min(2.20, 2.20) = 2.20  unclipped (inside): d/dlogp = 2.2
    #   t5 A=+1 ratio 1.25 -> 1.25 (inside the asymmetric range; a symmetric 0.2 clip would cap it at 1.2)
    #   t6 A=-1 ratio 0.79 -> min(-0.79, -0.80) = -0.80 clipped low, no gradient
    #   t7 masked, A=+100 ratio 3.0 -> ignored
    # objective sum = 1.28 + 0.5 - 0.8 - 1.5 + 2.2 + 1.25 - 0.8 = 2.13 over 7 tokens: loss = -2.13 / 7
    ratios = torch.tensor([[1.5, 0.5, 0.5, 1.5, 1.1, 1.25, 0.79, 3.0]])
    adv = torch.tensor([[1.0, 1.0, -1.0, -1.0, 2.0, 1.0, -1.0, 100.0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1, 1, 0]])
    logp = ratios.log().requires_grad_(True)
    loss, stats = grpo_surrogate_loss(logp, torch.zeros_like(logp), adv, mask, eps_low=0.2, eps_high=0.28)
    assert loss.item() == pytest.approx(-2.13 / 7, abs=1e-6)
    assert (stats.tokens, stats.clipped_low, stats.clipped_high) == (7, 2, 1)
    loss.backward()
    # dL/dlogp_t = -A_t * ratio_t / 7 where unclipped, 0 where clipped or masked
    expected = torch.tensor([[0.0, -0.5, 0.0, 1.5, -2.2, -1.25, 0.0, 0.0]]) / 7
    assert torch.allclose(logp.grad, expected, atol=1e-6)


def test_per_rollout_advantages_are_broadcast_over_tokens():
    logp = torch.zeros(2, 3, requires_grad=True)
    per_rollout, _ = grpo_surrogate_loss(logp, torch.zeros(2, 3), torch.tensor([1.0, -0.5]), torch.ones(2, 3))
    per_token, _ = grpo_surrogate_loss(logp, torch.zeros(2, 3), torch.tensor([[1.0] * 3, [-0.5] * 3]), torch.ones(2, 3))
    assert per_rollout.item() == per_token.item() == pytest.approx(-(3 * 1.0 - 3 * 0.5) / 6)


def test_masked_positions_contribute_nothing_whatever_they_hold():
    torch.manual_seed(0)
    logp = (torch.randn(3, 6) - 2).requires_grad_(True)
    old = logp.detach() + 0.1 * torch.randn(3, 6)
    adv = torch.randn(3, 6)
    mask = torch.tensor([[1, 1, 0, 0, 1, 0], [0, 1, 1, 1, 0, 0], [1, 0, 0, 0, 0, 1]])
    garbage_old = torch.where(mask.bool(), old, torch.full_like(old, -1e4))
    garbage_adv = torch.where(mask.bool(), adv, torch.full_like(adv, 1e6))
    grads = []
    for o, a in ((old, adv), (garbage_old, garbage_adv)):
        logp.grad = None
        loss, _ = grpo_surrogate_loss(logp, o, a, mask)
        loss.backward()
        grads.append((loss.item(), logp.grad.clone()))
    assert grads[0][0] == grads[1][0]
    assert torch.equal(grads[0][1], grads[1][1])
    assert torch.all(grads[0][1][~mask.bool()] == 0)


def test_the_denominator_is_clamped_to_one_so_an_all_masked_batch_is_zero_not_nan():
    logp = torch.zeros(2, 4, requires_grad=True)
    loss, stats = grpo_surrogate_loss(logp, torch.zeros(2, 4), torch.ones(2), torch.zeros(2, 4))
    loss.backward()
    assert loss.item() == 0.0 and stats.tokens == 0 and not torch.isnan(logp.grad).any()


def test_micro_batches_with_the_mini_batch_token_count_add_up_to_the_mini_batch_loss():
    torch.manual_seed(1)
    logp = torch.randn(4, 5, requires_grad=True)
    old, adv = logp.detach() + 0.3 * torch.randn(4, 5), torch.randn(4)
    mask = (torch.rand(4, 5) > 0.3).long()
    whole, _ = grpo_surrogate_loss(logp, old, adv, mask)
    n = int(mask.sum())  # token-level: the mini-batch's tokens, not per-sequence means
    halves = [
        grpo_surrogate_loss(logp[s], old[s], adv[s], mask[s], denominator=n)[0] for s in (slice(0, 2), slice(2, 4))
    ]
    assert (halves[0] + halves[1]).item() == pytest.approx(whole.item(), abs=1e-6)


def test_the_kl_term_is_off_by_default_and_a_k3_penalty_when_on():
    logp = torch.log(torch.tensor([[0.5, 0.25]])).requires_grad_(True)
    ref = torch.log(torch.tensor([[0.25, 0.25]]))
    base, stats = grpo_surrogate_loss(logp, logp.detach(), torch.zeros(1), torch.ones(1, 2))
    assert base.item() == 0.0 and stats.ref_kl_sum == 0.0
    with_kl, stats = grpo_surrogate_loss(
        logp, logp.detach(), torch.zeros(1), torch.ones(1, 2), ref_logp=ref, kl_coef=0.1
    )
    # token 0: d = log(0.25/0.5) = -log 2, k3 = 0.5 - 1 + log 2 = 0.19315; token 1: d = 0, k3 = 0
    k3 = 0.5 - 1 + math.log(2)
    assert stats.ref_kl_sum == pytest.approx(k3, abs=1e-6)
    assert with_kl.item() == pytest.approx(0.1 * k3 / 2, abs=1e-6)
