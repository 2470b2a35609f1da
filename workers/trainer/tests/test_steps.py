"""Real gradient steps on a tiny randomly initialized Qwen3-architecture model, on the CPU."""

from __future__ import annotations

import copy
import math

import torch
from trainer_data import TINY, rollout_batch, transcript

from mockworld_trainer.batches import parse_records
from mockworld_trainer.config import parse_model_spec, parse_step_config
from mockworld_trainer.grpo import group_advantages, grpo_surrogate_loss
from mockworld_trainer.grpo_step import encode_records, grpo_update
from mockworld_trainer.model import Policy, load_model, load_tokenizer, pad_batch, token_logprobs
from mockworld_trainer.optim import clip_and_step, make_optimizer, norm_metrics
from mockworld_trainer.sft import sft_update

CPU = torch.device("cpu")


def tiny_policy() -> Policy:
    spec = parse_model_spec(TINY)
    return Policy(load_model(spec, None, CPU), load_tokenizer(spec), CPU)


def records(groups: int = 2, per_group: int = 4):
    return parse_records(rollout_batch(groups, per_group), grpo=True, source="test")


def test_a_grpo_step_changes_the_parameters_and_reports_its_metrics():
    policy, recs = tiny_policy(), records()
    cfg = parse_step_config({"lr": 1e-3, "micro_batch_size": 3})
    before = copy.deepcopy(policy.model.state_dict())
    metrics = grpo_update(policy, make_optimizer(policy.model, cfg), recs, cfg)
    changed = [k for k, v in policy.model.state_dict().items() if not torch.equal(v, before[k])]
    assert len(changed) >= len(before) // 2
    assert metrics["num_samples"] == 8 and metrics["num_groups"] == 2 and metrics["zero_variance_groups"] == 0
    assert metrics["num_updates"] == 1  # 2 groups < mini_batch_groups = 16: one update, on-policy
    assert metrics["ratio_mean"] == 1.0 and metrics["clip_frac"] == 0.0
    assert metrics["num_tokens"] == sum(sum(e.loss_mask[1:]) for e in encode_records(policy, recs, 10_000))
    assert metrics["grad_norm"] > 0 and metrics["reward_mean"] == 0.5


def _surrogate_against(policy: Policy, recs, old: list[torch.Tensor]) -> float:
    """The GRPO objective of the current policy, measured against the log-probs of a fixed old policy."""
    enc = encode_records(policy, recs, 10_000)
    ids, attn, lmask = pad_batch(enc, policy.tokenizer.pad_id, CPU)
    adv = group_advantages(torch.tensor([r.reward for r in recs]), [r.group_id for r in recs]).advantages
    with torch.no_grad():
        logp = token_logprobs(policy.model, ids, attn)
        old_t = torch.zeros_like(logp)
        for i, o in enumerate(old):
            old_t[i, : o.shape[0]] = o
        loss, _ = grpo_surrogate_loss(logp, old_t, adv, lmask[:, 1:])
    return float(loss)


def test_grpo_steps_on_a_fixed_batch_lower_the_surrogate_loss_and_favour_rewarded_rollouts():
    policy, recs = tiny_policy(), records()
    enc = encode_records(policy, recs, 10_000)
    ids, attn, lmask = pad_batch(enc, policy.tokenizer.pad_id, CPU)
    with torch.no_grad():
        logp0 = token_logprobs(policy.model, ids, attn)
    old = [logp0[i, : len(e.input_ids) - 1] for i, e in enumerate(enc)]
    cfg = parse_step_config({"lr": 1e-3, "micro_batch_size": 8})
    opt = make_optimizer(policy.model, cfg)
    losses = [_surrogate_against(policy, recs, old)]
    for _ in range(3):
        grpo_update(policy, opt, recs, cfg)
        losses.append(_surrogate_against(policy, recs, old))
    # At the start the loss is -(token-weighted mean advantage); every step lowers it. The room is
    # small: the shared first assistant turn has opposite advantages in the same context and cancels.
    assert all(b < a for a, b in zip(losses, losses[1:], strict=False)), losses
    assert losses[-1] < losses[0] - 0.01, losses
    with torch.no_grad():
        logp = token_logprobs(policy.model, ids, attn)
    mask = lmask[:, 1:].bool()
    gain = [float((logp[i] - logp0[i])[mask[i]].mean()) for i in range(len(recs))]
    good = [g for g, r in zip(gain, recs, strict=False) if r.reward == 1.0]
    bad = [g for g, r in zip(gain, recs, strict=False) if r.reward == 0.0]
    assert min(good) > max(bad)


def test_later_mini_batches_of_a_step_are_off_policy_and_get_clipped():
    policy, recs = tiny_policy(), records(groups=4)
    cfg = parse_step_config({"lr": 5e-2, "mini_batch_groups": 1, "micro_batch_size": 4})
    metrics = grpo_update(policy, make_optimizer(policy.model, cfg), recs, cfg)
    assert metrics["num_updates"] == 4
    assert metrics["ratio_mean"] != 1.0 and metrics["clip_frac"] > 0
    assert metrics["clip_frac"] == metrics["clip_frac_low"] + metrics["clip_frac_high"]


def test_an_sft_step_lowers_the_cross_entropy_on_a_fixed_batch():
    policy = tiny_policy()
    recs = parse_records(
        [{"messages": transcript(a)} for a in ("Rolled back v2.1.", "Rolled back to v2.0.")], grpo=False, source="t"
    )
    cfg = parse_step_config({"lr": 1e-2})
    opt = make_optimizer(policy.model, cfg)
    losses = [sft_update(policy, opt, recs, cfg)["loss"] for _ in range(6)]
    assert losses[-1] < losses[0] - 0.5, losses
    assert all(b < a for a, b in zip(losses, losses[1:], strict=False)), losses


def _grads(policy: Policy, recs, old_fill: float | None = None) -> dict[str, torch.Tensor]:
    enc = encode_records(policy, recs, 10_000)
    ids, attn, lmask = pad_batch(enc, policy.tokenizer.pad_id, CPU)
    adv = group_advantages(torch.tensor([r.reward for r in recs]), [r.group_id for r in recs]).advantages
    policy.model.zero_grad(set_to_none=True)
    logp = token_logprobs(policy.model, ids, attn)
    mask = lmask[:, 1:]
    old = logp.detach() - 0.1  # ratio e^0.1 on generated tokens
    if old_fill is not None:
        old = torch.where(mask.bool(), old, torch.full_like(old, old_fill))
    loss, _ = grpo_surrogate_loss(logp, old, adv, mask)
    loss.backward()
    return {n: p.grad.clone() for n, p in policy.model.named_parameters()}


def test_masked_tokens_contribute_exactly_zero_gradient_through_the_model():
    policy = tiny_policy()

    def batch(tool_reply: str):
        raw = rollout_batch(1, 4)
        for r in raw:  # end each transcript with a tool turn, which is context, not an action
            r["messages"].append({"role": "tool", "tool_call_id": "c2", "content": tool_reply})
        return parse_records(raw, grpo=True, source="t")

    base = _grads(policy, batch("status: healthy"))
    other_targets = _grads(policy, batch("STATUS: BROKEN!"))  # same length, different masked tokens
    garbage_old = _grads(policy, batch("status: healthy"), old_fill=-1e4)  # junk old log-probs where masked
    for name, g in base.items():
        assert torch.equal(g, other_targets[name]), name
        assert torch.equal(g, garbage_old[name]), name
    # and the check can fail: changing a generated token does change the gradient
    changed = batch("status: healthy")
    changed[0].messages[-2]["content"] = "Rolled back v2.2."
    assert not all(torch.equal(g, _grads(policy, changed)[n]) for n, g in base.items())


def test_an_update_with_non_finite_gradients_is_skipped_and_counted():
    policy = tiny_policy()
    opt = make_optimizer(policy.model, parse_step_config({"lr": 1e-2}))
    before = copy.deepcopy(policy.model.state_dict())
    for p in policy.model.parameters():
        p.grad = torch.full_like(p, float("nan"))
    norm = clip_and_step(policy.model, opt, 1.0)
    assert math.isnan(norm)
    assert all(torch.equal(v, policy.model.state_dict()[k]) for k, v in before.items())
    assert norm_metrics([norm, 2.0]) == {"grad_norm": 2.0, "skipped_updates": 1}
