"""Old log-probabilities are those of the distribution the rollouts were sampled from (issue 18).

The policy server samples from softmax(logits / T) cut to the nucleus top_p (serving/generation.py);
pi_old and pi_theta of a GRPO step must be that distribution, not softmax(logits), or the ratio
and its clip measure the distance to a policy nothing was sampled from.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from trainer_data import TINY, rollout_batch

from mockworld_trainer.batches import parse_records
from mockworld_trainer.config import parse_model_spec, parse_step_config
from mockworld_trainer.grpo_step import encode_records, sequence_logprobs
from mockworld_trainer.model import Policy, load_model, load_tokenizer, token_logprobs
from mockworld_trainer.optim import no_progress

CPU = torch.device("cpu")


class FixedLogits(torch.nn.Module):
    """Every position predicts the same logits [2, 1, 0, -1] over a 4-token vocabulary."""

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, use_cache: bool) -> SimpleNamespace:
        b, t = input_ids.shape
        return SimpleNamespace(logits=torch.tensor([2.0, 1.0, 0.0, -1.0]).expand(b, t, 4))


IDS = torch.tensor([[0, 1, 3]])  # predicts token 1, then token 3
ATTN = torch.ones_like(IDS)


def test_temperature_scales_the_logits_before_the_softmax():
    # T = 0.5: logits / T = [4, 2, 0, -2]; log Z = log(e^4 + e^2 + e^0 + e^-2) = log 63.1226 = 4.145080
    log_z = math.log(math.exp(4) + math.exp(2) + 1 + math.exp(-2))
    logp = token_logprobs(FixedLogits(), IDS, ATTN, temperature=0.5)
    assert logp[0].tolist() == pytest.approx([2 - log_z, -2 - log_z], abs=1e-5)  # [-2.145080, -6.145080]
    # T = 1 is the plain softmax, as before
    log_z1 = math.log(math.exp(2) + math.exp(1) + 1 + math.exp(-1))
    assert token_logprobs(FixedLogits(), IDS, ATTN)[0].tolist() == pytest.approx([1 - log_z1, -1 - log_z1], abs=1e-5)


def test_top_p_renormalizes_over_the_nucleus_the_sampler_kept():
    # T = 0.5, p = [0.864954, 0.117059, 0.015842, 0.002144]; the sampler keeps the smallest prefix
    # whose mass before it is < 0.9: tokens {0, 1} (0 < 0.9, 0.865 < 0.9, 0.982 >= 0.9).
    #   token 1 (in the nucleus): 2 - log(e^4 + e^2) = 2 - 4.126928 = -2.126928
    #   token 3 (outside it; the sampler cannot draw it, float noise between sampler and trainer
    #   can put it there): kept with its own mass so the ratio stays finite:
    #   -2 - log(e^4 + e^2 + e^-2) = -2 - 4.129107 = -6.129107
    logp = token_logprobs(FixedLogits(), IDS, ATTN, temperature=0.5, top_p=0.9)
    expected = [2 - math.log(math.exp(4) + math.exp(2)), -2 - math.log(math.exp(4) + math.exp(2) + math.exp(-2))]
    assert logp[0].tolist() == pytest.approx(expected, abs=1e-5)


def test_the_gradient_of_a_tempered_log_prob_is_that_of_the_tempered_softmax():
    # d/dz log softmax(z / T)_a = (onehot_a - softmax(z / T)) / T; T = 0.5, a = 1
    z = torch.tensor([[[2.0, 1.0, 0.0, -1.0]] * 2], requires_grad=True)  # (1, 2, 4)

    class Leaf(torch.nn.Module):
        def forward(self, input_ids, attention_mask, use_cache):  # noqa: ANN001, ANN202
            return SimpleNamespace(logits=z)

    token_logprobs(Leaf(), torch.tensor([[0, 1]]), torch.ones(1, 2, dtype=torch.long), temperature=0.5)[0, 0].backward()
    p = torch.softmax(torch.tensor([4.0, 2.0, 0.0, -2.0]), -1)
    assert z.grad[0, 0].tolist() == pytest.approx(((torch.tensor([0.0, 1, 0, 0]) - p) / 0.5).tolist(), abs=1e-5)


def test_a_grpo_step_scores_pi_old_at_the_rollouts_temperature_and_top_p():
    spec = parse_model_spec(TINY)
    policy = Policy(load_model(spec, None, CPU), load_tokenizer(spec), CPU)
    policy.model.eval()
    records = parse_records(rollout_batch(1, 2), grpo=True, source="test")
    cfg = parse_step_config({"temperature": 0.7, "top_p": 0.95})
    assert (cfg.temperature, cfg.top_p) == (0.7, 0.95)
    assert (parse_step_config(None).temperature, parse_step_config(None).top_p) == (1.0, 1.0)
    encoded = encode_records(policy, records, cfg.max_seq_len)
    old = sequence_logprobs(policy, encoded, 4, no_progress, "old_logprobs", temperature=0.7, top_p=0.95)
    ids = torch.tensor([encoded[0].input_ids])
    with torch.no_grad():
        logits = policy.model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[0, :-1].float() / 0.7
    probs = torch.softmax(logits, -1)
    sorted_p, order = torch.sort(probs, dim=-1, descending=True, stable=True)
    keep_sorted = (torch.cumsum(sorted_p, -1) - sorted_p) < 0.95
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    target = ids[0, 1:]
    keep[torch.arange(len(target)), target] = True
    expected = logits.gather(-1, target[:, None])[:, 0] - torch.logsumexp(logits.masked_fill(~keep, -math.inf), -1)
    assert torch.allclose(old[0], expected, atol=1e-5)
    plain = sequence_logprobs(policy, encoded, 4, no_progress, "old_logprobs")
    assert not torch.allclose(old[0], plain[0], atol=1e-3)  # the untempered softmax is another distribution
