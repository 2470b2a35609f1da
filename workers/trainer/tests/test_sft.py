"""SFT on teacher demonstrations (an SftTraining run's step): only assistant tokens carry loss.

The records are shaped as the workflow writes them (activities/training/sft-dataset.ts: the `sft`
export's record, a chat with tool calls plus the tools it could call, with its task and episode ids).
"""

from __future__ import annotations

import pytest
import torch
from trainer_data import TINY, transcript

from mockworld_trainer.batches import parse_records
from mockworld_trainer.config import parse_model_spec, parse_step_config
from mockworld_trainer.errors import BadRequestError
from mockworld_trainer.grpo_step import encode_records
from mockworld_trainer.model import Policy, load_model, load_tokenizer, pad_batch
from mockworld_trainer.optim import make_optimizer
from mockworld_trainer.sft import masked_nll, sft_update

CPU = torch.device("cpu")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_logs",
            "description": "Logs of a service",
            "parameters": {"type": "object", "properties": {"svc": {"type": "string"}}, "required": ["svc"]},
        },
    }
]


def tiny_policy() -> Policy:
    spec = parse_model_spec(TINY)
    return Policy(load_model(spec, None, CPU), load_tokenizer(spec), CPU)


def demonstrations(*answers: str, trailing_user: str | None = None):
    """Records as an SftTraining batch holds them; ``trailing_user`` appends a user turn after the last answer."""
    raw = []
    for n, answer in enumerate(answers):
        messages = transcript(answer)
        if trailing_user is not None:
            messages.append({"role": "user", "content": trailing_user})
        raw.append({"task_id": f"t-{n}", "episode_id": f"t-{n}/demo-0", "messages": messages, "tools": TOOLS})
    return parse_records(raw, grpo=False, source="test")


def _logits_and_targets(policy: Policy, recs):
    enc = encode_records(policy, recs, 10_000)
    ids, attn, lmask = pad_batch(enc, policy.tokenizer.pad_id, CPU)  # (B, T) each
    logits = policy.model(input_ids=ids, attention_mask=attn, use_cache=False).logits  # (B, T, V)
    return logits, ids[:, 1:], lmask[:, 1:]  # logits (B, T, V), targets (B, T-1), mask (B, T-1)


def _nll(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, targets[..., None])[..., 0]  # (B, T-1)
    return masked_nll(logp, mask)


def test_the_logits_of_non_assistant_positions_get_exactly_zero_gradient():
    policy = tiny_policy()
    logits, targets, mask = _logits_and_targets(policy, demonstrations("Rolled back v2.1.", "Rolled back to v2.0."))
    logits.retain_grad()
    _nll(logits, targets, mask).backward()
    grad = logits.grad[:, :-1]  # (B, T-1, V): the positions that predict a target
    masked = ~mask.bool()
    # System prompt with the tools, user, tool result, role headers and padding are all context.
    assert int(masked.sum()) > int(mask.sum()) > 0
    assert torch.count_nonzero(grad[masked]) == 0
    # Every assistant target gets a gradient: its own softmax row, (p - onehot) / n.
    assert bool((grad[mask.bool()].abs().sum(-1) > 0).all())


def test_perturbing_only_non_assistant_targets_leaves_the_loss_and_the_parameter_gradient_unchanged():
    policy = tiny_policy()
    recs = demonstrations("Rolled back v2.1.", "Rolled back to v2.0.")

    def loss_and_grads(perturb: bool):
        policy.model.zero_grad(set_to_none=True)
        logits, targets, mask = _logits_and_targets(policy, recs)
        if perturb:  # every non-assistant target replaced by another token
            other = (targets + 1 + torch.randint_like(targets, 5)) % logits.shape[-1]
            targets = torch.where(mask.bool(), targets, other)
        loss = _nll(logits, targets, mask)
        loss.backward()
        return loss.detach(), {n: p.grad.clone() for n, p in policy.model.named_parameters() if p.grad is not None}

    torch.manual_seed(0)
    loss, grads = loss_and_grads(perturb=False)
    perturbed_loss, perturbed_grads = loss_and_grads(perturb=True)
    assert torch.equal(loss, perturbed_loss)
    assert grads.keys() == perturbed_grads.keys() and len(grads) > 0
    assert all(torch.equal(grads[n], perturbed_grads[n]) for n in grads)
    # The check is not vacuous: perturbing an assistant target does change the loss.
    logits, targets, mask = _logits_and_targets(policy, recs)
    first = int(mask[0].nonzero()[0])
    targets = targets.clone()
    targets[0, first] = (targets[0, first] + 1) % logits.shape[-1]
    assert not torch.equal(_nll(logits, targets, mask).detach(), loss)


def test_a_trailing_user_turn_adds_no_loss_tokens_and_no_gradient_to_an_sft_step():
    cfg = parse_step_config({"lr": 1e-2})
    out = []
    for trailing in (None, "Thanks, that fixed it. Anything else I should check tomorrow?"):
        policy = tiny_policy()
        recs = demonstrations("Rolled back v2.1.", "Rolled back to v2.0.", trailing_user=trailing)
        out.append(sft_update(policy, make_optimizer(policy.model, cfg), recs, cfg))
    plain, trailing_user = out
    assert trailing_user["num_tokens"] == plain["num_tokens"] > 0
    # Causal attention: the earlier positions' logits are the same; only float noise of longer rows.
    assert abs(trailing_user["loss"] - plain["loss"]) <= 1e-5 * plain["loss"]
    assert abs(trailing_user["grad_norm"] - plain["grad_norm"]) <= 1e-4 * plain["grad_norm"]


def test_sft_steps_on_a_fixed_batch_of_tool_call_demonstrations_lower_the_loss():
    policy = tiny_policy()
    recs = demonstrations("Rolled back v2.1.", "Rolled back to v2.0.", "Rolled back v2.1 and paged on-call.")
    cfg = parse_step_config({"lr": 1e-2})
    opt = make_optimizer(policy.model, cfg)
    losses = [sft_update(policy, opt, recs, cfg)["loss"] for _ in range(5)]
    assert all(b < a for a, b in zip(losses, losses[1:], strict=False)), losses
    assert losses[-1] < losses[0] - 0.5, losses


def test_a_batch_cut_before_every_assistant_token_is_refused_not_trained_on():
    policy = tiny_policy()
    cfg = parse_step_config({"lr": 1e-3, "max_seq_len": 16})  # shorter than any record's prompt
    optimizer = make_optimizer(policy.model, cfg)
    before = {name: p.detach().clone() for name, p in policy.model.named_parameters()}
    with pytest.raises(BadRequestError, match="no assistant token within max_seq_len 16"):
        sft_update(policy, optimizer, demonstrations("Done.", "All sorted."), cfg)
    assert all(torch.equal(p, before[name]) for name, p in policy.model.named_parameters())
