"""Turns that must be a tool call: ``tool_choice`` "required" or a named function.

The server writes the call's opening in the layout the trainer writes calls in (the tokenizer's
``tool_call_opening``) and the function's name: the named one, or one the policy draws among the
request's tools from its own probabilities of each opening, renormalized over them
(``choose_function``). The policy samples the arguments, and the turn ends at the closing tag, as
JSON-schema guided decoding does on vLLM. Arguments that do not parse are returned as written
(``tool_calls.forced_call``): the turn is the call of that function all the same.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import DynamicCache

from ..optim import autocast
from .generation import GREEDY_BELOW
from .reload import Served
from .requests import ApiError, ChatRequest
from .tool_calls import forced_call, tool_call_entries


@dataclass(frozen=True)
class OpenedCall:
    """What the server wrote of a turn before the policy samples: nothing, when the turn is free."""

    opening: str
    """The text written (empty when the turn is free)."""
    prompt: list[int]
    """The prompt with the opening's tokens."""
    name: str | None
    """The function the opening names; None when free, or when the layout cannot name it up front."""


def check_forced_call(request: ChatRequest, served: Served) -> None:
    """A 400 when the turn must call a named function and the model's call layout cannot say so."""
    if request.call_name is not None and served.policy.tokenizer.tool_call_opening(request.call_name) is None:
        raise ApiError(
            400,
            "this model's tool-call layout cannot fix the function name; use tool_choice 'required'",
            param="tool_choice",
        )


def open_call(
    request: ChatRequest, served: Served, prompt: list[int], generator: torch.Generator, lock: threading.Lock
) -> OpenedCall:
    """The opening of one choice of ``request`` (the function drawn per choice); ``lock`` guards the
    tokenizer."""
    if not request.call_required:
        return OpenedCall("", prompt, None)
    tok = served.policy.tokenizer
    name = request.call_name
    if name is None and tok.tool_call_opening("") is not None:  # the layout writes the name up front
        with lock:
            openings = {n: tok.text_ids(tok.tool_call_opening(n)) for n in request.tool_names}
        name = choose_function(served, prompt, openings, request.temperature, generator)
    opening = tok.tool_call_opening(name)
    with lock:
        return OpenedCall(opening, prompt + tok.text_ids(opening), name)


def as_call(
    choice: dict[str, Any], opened: OpenedCall, text: str, ids: Sequence[int], seed: int | None, finish: str
) -> dict[str, Any]:
    """``choice`` as the call of the opened function when its arguments did not parse as one."""
    if opened.name is None or choice["message"].get("tool_calls"):
        return choice
    call = forced_call(text, opened.opening, opened.name)
    message = {"role": "assistant", "content": None, "refusal": None}
    message["tool_calls"] = tool_call_entries([call], seed, opened.prompt, ids)
    return {**choice, "message": message, "finish_reason": "tool_calls" if finish == "stop" else finish}


@torch.inference_mode()
def opening_logprobs(served: Served, prompt_ids: Sequence[int], openings: dict[str, list[int]]) -> dict[str, float]:
    """By name, the policy's log-probability of writing that call opening (its tokens) after the prompt;
    the prompt is run once, each opening goes on from a copy of its KV cache."""
    model, device = served.policy.model, served.policy.device
    prompt_cache = DynamicCache(config=model.config)
    with autocast(device):
        first = model(
            input_ids=torch.tensor([list(prompt_ids)], dtype=torch.long, device=device),
            cache=prompt_cache,
            use_cache=True,
            logits_to_keep=1,
        ).logits[0, -1:].float()  # (1, V): the next token's logits
    scores = {}
    for name, tail in openings.items():
        with autocast(device):
            rest = model(
                input_ids=torch.tensor([tail], dtype=torch.long, device=device),
                cache=copy.deepcopy(prompt_cache),
                use_cache=True,
            ).logits[0, :-1].float()  # (t-1, V): each later token's logits
        logprobs = torch.log_softmax(torch.cat([first, rest]), dim=-1)  # (t, V)
        scores[name] = float(logprobs.gather(1, torch.tensor(tail, device=device)[:, None]).sum())
    return scores


def choose_function(
    served: Served, prompt_ids: Sequence[int], openings: dict[str, list[int]], temperature: float, generator
) -> str:
    """One function name of a required tool call, drawn from the policy's own probabilities of each
    allowed call opening (``opening_logprobs``) renormalized over them, at the request's temperature:
    the policy cannot call a function that does not exist, and still chooses which one."""
    scores = opening_logprobs(served, prompt_ids, openings)
    names = sorted(scores)
    score = torch.tensor([scores[n] for n in names])  # (names,)
    if temperature < GREEDY_BELOW:
        return names[int(torch.argmax(score))]
    return names[int(torch.multinomial(torch.softmax(score / temperature, dim=0), 1, generator=generator))]


