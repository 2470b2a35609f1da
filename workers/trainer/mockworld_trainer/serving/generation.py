"""Sampling one assistant turn from a served policy, from the model's full distribution.

``temperature`` (0 = greedy) and ``top_p`` only: no penalties and no stop strings, since the policy's own
distribution is what GRPO assumes. Draws use a per-request CPU ``torch.Generator``: the same seed,
weights and input give the same output, whatever else the server is doing.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

import torch
from transformers import DynamicCache

from ..model import ByteTokenizer
from ..optim import autocast
from .reload import Served

GREEDY_BELOW = 1e-5  # temperatures this small sample greedily (as vLLM does), not through an overflowing softmax


def sample_next(logits: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator) -> int:
    """One token from ``logits`` (V,): greedy at temperature 0, else softmax(logits / T) cut to top_p, on CPU."""
    logits = logits.float().cpu()
    if temperature < GREEDY_BELOW:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits / temperature, dim=-1)  # (V,)
    if top_p < 1.0:
        sorted_p, order = torch.sort(probs, descending=True, stable=True)  # (V,), (V,)
        keep = (torch.cumsum(sorted_p, 0) - sorted_p) < top_p  # the smallest prefix reaching top_p
        pick = torch.multinomial(sorted_p * keep, 1, generator=generator)
        return int(order[pick])
    return int(torch.multinomial(probs, 1, generator=generator))


@torch.inference_mode()
def generate(
    served: Served,
    prompt_ids: Sequence[int],
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    generator: torch.Generator,
    stop_text: str | None = None,
) -> tuple[list[int], str]:
    """Samples one assistant turn with a KV cache; returns (generated ids incl. the stop token, finish reason).

    ``stop_text``: the turn also ends ("stop") once its text contains it (a forced tool call ends at its
    closing tag, as guided decoding ends it when the call is complete)."""
    model, device = served.policy.model, served.policy.device
    cache = DynamicCache(config=model.config)
    ids = torch.tensor([list(prompt_ids)], dtype=torch.long, device=device)  # (1, T)
    out: list[int] = []
    while True:
        with autocast(device):  # as the trainer scores: bf16 autocast on CUDA
            logits = model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1).logits[0, -1]  # (V,)
        token = sample_next(logits, temperature, top_p, generator)
        out.append(token)
        if token in served.stop_ids or (stop_text and stop_text in decode(served, out[-_STOP_WINDOW:])):
            return out, "stop"
        if len(out) >= max_new_tokens:
            return out, "length"
        ids = torch.tensor([[token]], dtype=torch.long, device=device)  # (1, 1)


_STOP_WINDOW = 16  # tokens decoded to look for a stop text: more than any closing tag takes


def decode(served: Served, ids: Sequence[int]) -> str:
    """The text of generated ids, without the stop token; invalid bytes become U+FFFD."""
    body = [i for i in ids if i not in served.stop_ids]
    tok = served.policy.tokenizer
    if isinstance(tok, ByteTokenizer):
        return tok.decode(body)
    return tok.hf.decode(body, skip_special_tokens=True)


def make_generator(seed: int | None) -> torch.Generator:
    """A CPU generator of its own per request: the same seed gives the same draws, whatever else runs."""
    g = torch.Generator(device="cpu")
    g.manual_seed(seed if seed is not None else secrets.randbits(63))
    return g
