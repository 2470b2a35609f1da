"""Sequence packing: transcripts packed into token-budget rows give the padded batch's log-probs, loss and update."""

from __future__ import annotations

import copy

import pytest
import torch
from trainer_data import TINY, rollout_batch, transcript

from mockworld_trainer.batches import parse_records
from mockworld_trainer.config import parse_model_spec, parse_step_config
from mockworld_trainer.grpo_step import encode_records, grpo_update
from mockworld_trainer.model import Encoded, Policy, load_model, load_tokenizer
from mockworld_trainer.optim import make_optimizer
from mockworld_trainer.packing import micro_batch_logprobs, plan_micro_batches
from mockworld_trainer.sft import sft_update

CPU = torch.device("cpu")


def tiny_policy() -> Policy:
    spec = parse_model_spec(TINY)
    return Policy(load_model(spec, None, CPU), load_tokenizer(spec), CPU)


def varied_records(grpo: bool = True):
    """Transcripts of very different lengths, so padding to the longest wastes most of a micro-batch."""
    raw = rollout_batch(2, 4)
    for k, r in enumerate(raw):
        r["messages"][-1]["content"] = "Rolled back." * (1 + 7 * (k % 3)) if k % 2 else "Scaled up."
    if not grpo:
        raw = [{"messages": r["messages"]} for r in raw]
    return parse_records(raw, grpo=grpo, source="test")


def test_packing_is_first_fit_decreasing_within_the_budget_and_deterministic():
    lengths = [50, 10, 40, 30, 20, 120]
    encoded = [Encoded([1] * n, [0] * n) for n in lengths]
    rows = plan_micro_batches(encoded, range(6), 4, 60)
    assert rows == [[5], [0, 1], [2, 4], [3]]  # 120 alone (over the budget), 50+10, 40+20, 30
    assert rows == plan_micro_batches(encoded, range(6), 4, 60)
    assert plan_micro_batches(encoded, range(6), 4, 0) == [[0, 1, 2, 3], [4, 5]]  # unpacked: by count


@pytest.mark.parametrize("sampling", [(1.0, 1.0), (0.7, 0.9)])
def test_packed_rows_give_each_transcript_its_own_log_probs(sampling):
    policy = tiny_policy()
    encoded = encode_records(policy, varied_records(), 10_000)
    items = encoded[:5]
    with torch.no_grad():
        padded = micro_batch_logprobs(policy.model, items, policy.tokenizer.pad_id, CPU, False, *sampling)
        packed = micro_batch_logprobs(policy.model, items, policy.tokenizer.pad_id, CPU, True, *sampling)
    for a, b, e in zip(padded, packed, items, strict=True):
        assert a.shape == b.shape == (len(e.input_ids) - 1,)
        assert torch.allclose(a, b, atol=1e-5)


def test_a_packed_grpo_step_has_the_loss_and_update_of_the_padded_one():
    recs = varied_records()
    results = {}
    for pack in (0, 400):
        policy = tiny_policy()
        cfg = parse_step_config({"lr": 1e-3, "micro_batch_size": 3, "mini_batch_groups": 1, "pack_tokens": pack})
        metrics = grpo_update(policy, make_optimizer(policy.model, cfg), recs, cfg)
        results[pack] = (metrics, copy.deepcopy(policy.model.state_dict()))
    (padded, w_padded), (packed, w_packed) = results[0], results[400]
    assert packed["num_updates"] == padded["num_updates"] == 2  # a second update sees a moved policy
    for key in ("loss", "approx_kl", "ratio_mean", "clip_frac", "grad_norm"):
        assert packed[key] == pytest.approx(padded[key], rel=1e-5, abs=1e-7), key
    # Sums in another order: float32 noise, through two AdamW updates of size ~lr = 1e-3 each.
    assert all(torch.allclose(w_packed[k], w_padded[k], atol=1e-5) for k in w_padded)
    assert padded["padding_fraction"] > 0.2 and packed["padding_fraction"] == 0.0
    assert packed["tokens_per_s"] > 0 and packed["peak_memory_bytes"] > 0 and packed["world_size"] == 1
    assert packed["peak_memory_bytes_per_rank"] == [packed["peak_memory_bytes"]]


def test_a_packed_sft_step_has_the_loss_of_the_padded_one():
    recs = varied_records(grpo=False)
    out = []
    for pack in (0, 300):
        policy = tiny_policy()
        cfg = parse_step_config({"lr": 1e-3, "micro_batch_size": 2, "pack_tokens": pack})
        out.append(sft_update(policy, make_optimizer(policy.model, cfg), recs, cfg))
    assert out[1]["loss"] == pytest.approx(out[0]["loss"], rel=1e-6)
    assert out[1]["grad_norm"] == pytest.approx(out[0]["grad_norm"], rel=1e-5)


def test_a_transcript_is_not_changed_by_packing_it_next_to_another():
    policy = tiny_policy()
    enc = policy.tokenizer.encode(transcript("Rolled back v2.1."))
    other = policy.tokenizer.encode(transcript("x" * 300))
    with torch.no_grad():
        alone = micro_batch_logprobs(policy.model, [enc], policy.tokenizer.pad_id, CPU, True)[0]
        after = micro_batch_logprobs(policy.model, [other, enc], policy.tokenizer.pad_id, CPU, True)[1]
    assert torch.allclose(alone, after, atol=1e-5)
