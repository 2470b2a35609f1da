"""Turns that must be a tool call: ``tool_choice`` "required" or a named function.

The server writes the call's opening in the layout the trainer writes calls in (the tokenizer's
``tool_call_opening``) and the function's name: the named one, or one the policy draws among the
request's tools from its own probabilities of each opening, renormalized over them
(``choose_function``). Then the arguments, as JSON-schema guided decoding writes them on vLLM:

- when every required parameter of the function is a string (``guided_keys``), the server writes the
  object's structure (each key and its quotes) and the policy samples each value up to its closing
  quote (``sample_guided_arguments``): the call always parses and names its required arguments;
- otherwise the policy samples the whole object and the turn ends at the closing tag. Arguments that
  do not parse are returned as written (``tool_calls.forced_call``): the turn is the call of that
  function all the same.

Everything the server writes counts as the turn's completion tokens and is trained on as the
policy's own, as vLLM's guided tokens are.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import DynamicCache

from ..optim import autocast
from .generation import GREEDY_BELOW, decode, generate
from .reload import Served
from .requests import ApiError, ChatRequest
from .tool_calls import TOOL_CLOSE, forced_call, tool_call_entries


@dataclass(frozen=True)
class OpenedCall:
    """What the server wrote of a turn before the policy samples: nothing, when the turn is free."""

    opening: str
    """The text written (empty when the turn is free)."""
    prompt: list[int]
    """The prompt with the opening's tokens."""
    name: str | None
    """The function the opening names; None when free, or when the layout cannot name it up front."""
    keys: tuple[str, ...] | None = None
    """The argument keys the server writes (``guided_keys``); None when the policy writes the object."""


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
    keys = guided_keys(request.tools, name) if name is not None and opening.endswith("{") else None
    with lock:
        return OpenedCall(opening, prompt + tok.text_ids(opening), name, keys)


def guided_keys(tools: list[dict[str, Any]] | None, name: str) -> tuple[str, ...] | None:
    """The required parameters of function ``name`` in their declared order, when there are some and
    each is a plain string (no enum, pattern or format to hold to); None otherwise."""
    function = next((t["function"] for t in tools or [] if t["function"]["name"] == name), {})
    schema = function.get("parameters") or {}
    properties, required = schema.get("properties") or {}, schema.get("required") or []
    if not required or not all(isinstance(k, str) and k in properties for k in required):
        return None
    plain = ({"string"}, {"type", "description"})
    for key in required:
        prop = properties[key]
        if not isinstance(prop, dict) or {prop.get("type")} != plain[0] or not set(prop) <= plain[1]:
            return None
    return tuple(k for k in properties if k in required)


def sample_turn(
    request: ChatRequest, served: Served, opened: OpenedCall, max_new: int, generator: torch.Generator,
    lock: threading.Lock,
) -> tuple[list[int], str, str]:
    """(ids sampled or written after the opening, finish reason, the turn's text, opening included)."""
    if opened.keys is not None:
        return sample_guided_arguments(request, served, opened, max_new, generator, lock)
    stop_text = TOOL_CLOSE if opened.opening else None
    ids, finish = generate(
        served, opened.prompt, max_new, request.temperature, request.top_p, generator, stop_text=stop_text
    )
    with lock:
        return ids, finish, opened.opening + decode(served, ids)


def sample_guided_arguments(
    request: ChatRequest, served: Served, opened: OpenedCall, max_new: int, generator: torch.Generator,
    lock: threading.Lock,
) -> tuple[list[int], str, str]:
    """The arguments object of ``opened.keys``: the server writes each key and the quotes, the policy
    samples each string value up to the quote that closes it, and the server closes the call. A value
    cut by ``max_new`` ends the turn there ("length"), as a guided decoder's output is cut."""
    tok = served.policy.tokenizer
    prompt, ids, text = list(opened.prompt), [], opened.opening

    def write(piece: str) -> bool:
        nonlocal text
        with lock:
            piece_ids = tok.text_ids(piece)
        prompt.extend(piece_ids)
        ids.extend(piece_ids)
        text += piece
        return len(ids) <= max_new

    for k, key in enumerate(opened.keys or ()):
        if not write(("" if k == 0 else ", ") + json.dumps(key) + ': "') or len(ids) == max_new:
            return ids, "length", text
        sampled, finish = generate(
            served, prompt, max_new - len(ids), request.temperature, request.top_p, generator, stop_text='"'
        )
        with lock:
            written = decode(served, sampled)
        value, closed = written.split('"', 1)[0], '"' in written
        if not closed and finish == "length":
            ids.extend(sampled)
            return ids, "length", text + written
        if not write(_json_string_body(value)):  # re-tokenized: the quote's token may carry more text
            return ids, "length", text
    closing = '"' + "}}\n" + TOOL_CLOSE
    return (ids, "stop", text + closing) if write(closing) else (ids, "length", text)


def _json_string_body(value: str) -> str:
    """``value`` as the inside of a JSON string: kept when it already is one (escapes and all),
    else escaped (a raw newline, a lone backslash)."""
    try:
        json.loads(f'"{value}"')
        return value
    except ValueError:
        return json.dumps(value, ensure_ascii=False)[1:-1]


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


