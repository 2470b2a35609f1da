"""Micro-batches of a step: padded to the longest transcript, or packed into rows of a token budget.

Padding a micro-batch of agentic transcripts to its longest one spends most of the forward on pad
positions when lengths vary (a 13,000-token rollout next to 2,000-token ones). With ``pack_tokens``
set, transcripts are packed first-fit-decreasing into rows of at most that many tokens, one row per
micro-batch, with no padding at all; a block-diagonal causal mask and positions that restart at 0 for
each transcript keep every transcript's tokens attending only to their own past, so each token's
log-probability is the one it has alone. With sdpa or eager attention the mask is dense (L x L bools per
row, and attention is computed over the whole row, masked); with flash-attention the restarting
positions alone select its variable-length kernels (tests/test_packing.py checks loss and gradients against the
padded batch). The budget also bounds activation memory per micro-batch by tokens, not sequences.

Either way the result is one log-probability row per transcript, (T_i - 1,) for transcript i, so the
GRPO and SFT losses see the same tensors whatever the layout.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedModel

from .model import Encoded, pad_batch, row_logprobs, token_logprobs
from .optim import autocast, chunks
from .ranks import Ranks


def plan_micro_batches(encoded: Sequence[Encoded], indices: Sequence[int], size: int, pack_tokens: int) -> list[list[int]]:
    """Micro-batches of ``indices``: ``size`` transcripts each (padded), or rows of <= ``pack_tokens`` tokens.

    Packing is first-fit decreasing by length (ties by index), so the same batch always packs the same
    way; a transcript longer than the budget gets a row of its own.
    """
    if pack_tokens <= 0:
        return list(chunks(list(indices), size))
    rows: list[list[int]] = []
    room: list[int] = []
    for i in sorted(indices, key=lambda i: (-len(encoded[i].input_ids), i)):
        n = len(encoded[i].input_ids)
        for r, left in enumerate(room):
            if n <= left:
                rows[r].append(i)
                room[r] -= n
                break
        else:
            rows.append([i])
            room.append(max(pack_tokens - n, 0))
    return [sorted(row) for row in rows]


def packed_inputs(
    items: Sequence[Encoded], device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One row of concatenated transcripts: input_ids (1, L), position_ids (1, L), mask (1, 1, L, L) bool.

    ``mask[0, 0, q, k]`` is True where query q may attend to key k: same transcript and k <= q.
    """
    ids = torch.tensor([t for e in items for t in e.input_ids], dtype=torch.long)  # (L,)
    positions = torch.cat([torch.arange(len(e.input_ids)) for e in items])  # (L,)
    segment = torch.cat([torch.full((len(e.input_ids),), j) for j, e in enumerate(items)])  # (L,)
    n = ids.shape[0]
    causal = torch.ones((n, n), dtype=torch.bool).tril_()  # (L, L)
    mask = causal & (segment[:, None] == segment[None, :])  # (L, L)
    return ids[None].to(device), positions[None].to(device), mask[None, None].to(device)


def packed_logprobs(
    model: PreTrainedModel, items: Sequence[Encoded], device: torch.device, temperature: float = 1.0, top_p: float = 1.0
) -> list[torch.Tensor]:
    """log pi(x_t | x_<t) of each packed transcript (model.token_logprobs' distribution): (T_i - 1,) float32 each."""
    ids, positions, mask = packed_inputs(items, device)
    if str(getattr(model.config, "_attn_implementation", "")).startswith("flash_attention"):
        # flash-attention finds the transcripts from the restarting positions (varlen kernels): no
        # L x L mask, and no attention computed across transcripts
        mask = None
    logits = model(input_ids=ids, position_ids=positions, attention_mask=mask, use_cache=False).logits[0]  # (L, V)
    out, start = [], 0
    for e in items:
        n = len(e.input_ids)
        row = logits[start : start + n - 1]  # (T_i - 1, V) predicting tokens 1..T_i-1
        out.append(row_logprobs(row, ids[0, start + 1 : start + n], temperature, top_p))
        start += n
    return out


def micro_batch_logprobs(
    model: PreTrainedModel,
    items: Sequence[Encoded],
    pad_id: int,
    device: torch.device,
    packed: bool,
    temperature: float = 1.0,
    top_p: float = 1.0,
) -> list[torch.Tensor]:
    """Per-transcript log-probabilities of one micro-batch, packed or padded; (T_i - 1,) each."""
    with autocast(device):
        if packed:
            return packed_logprobs(model, items, device, temperature, top_p)
        ids, attn, _ = pad_batch(items, pad_id, device)  # (b, T)
        logp = token_logprobs(model, ids, attn, temperature, top_p)  # (b, T-1)
    return [logp[j, : len(e.input_ids) - 1].float() for j, e in enumerate(items)]


def forward_positions(encoded: Sequence[Encoded], micro_batches: Sequence[Sequence[int]], packed: bool) -> int:
    """Token positions the forwards compute (padding included): packed, exactly the tokens."""
    if packed:
        return sum(len(encoded[i].input_ids) for mb in micro_batches for i in mb)
    return sum(len(mb) * max(len(encoded[i].input_ids) for i in mb) for mb in micro_batches if mb)


def flat(rows: Sequence[torch.Tensor]) -> torch.Tensor:
    """Per-transcript rows as one (1, sum T_i) tensor: the losses sum over tokens, so layout is free."""
    return torch.cat(list(rows))[None]


def rank_micro_batches(
    ranks: Ranks, encoded: Sequence[Encoded], groups: Sequence[Sequence[int]], size: int, pack_tokens: int
) -> list[list[int]]:
    """This rank's micro-batches over ``groups`` (each split over ranks on its own, ranks.py), followed by
    empty ones up to the most any rank runs: every rank runs the same number of forwards (FSDP's
    collectives), an empty one on ``EMPTY`` with zero weight."""
    plans: list[list[list[int]]] = [[] for _ in range(ranks.world)]
    for group in groups:
        for r, share in enumerate(ranks.assign(encoded, group)):
            plans[r] += plan_micro_batches(encoded, share, size, pack_tokens)
    most = max(len(p) for p in plans)
    return plans[ranks.rank] + [[] for _ in range(most - len(plans[ranks.rank]))]


EMPTY = Encoded([0, 0], [0, 0])  # what a rank with no transcript left forwards, to keep collectives in step
