"""Tool calls in a generated turn: ``<tool_call>`` blocks become OpenAI ``tool_calls``.

When the request has ``tools`` (and ``tool_choice`` is not ``"none"``), an output that is some text
followed only by one or more blocks ``<tool_call>{"name": N, "arguments": A}</tool_call>`` (whitespace
between blocks allowed), where every N is one of the request's tool names and A is a JSON object or a
string holding one (or absent: ``{}``), becomes ``message.tool_calls`` with ``finish_reason: "tool_calls"``;
the text before the first block (less one trailing newline) is the content, or null when blank. This is
Qwen3's format and the byte layout's (model.py ``message_text``). Anything else, junk included, is
returned as ``content``.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Sequence

TOOL_OPEN, TOOL_CLOSE = "<tool_call>", "</tool_call>"


def parse_tool_calls(text: str, tool_names: frozenset[str]) -> tuple[str | None, list[dict[str, str]]] | None:
    """(content, [{"name", "arguments"}]) when ``text`` ends in valid tool-call blocks only, else None."""
    start = text.find(TOOL_OPEN)
    if start < 0:
        return None
    bodies, pos = [], start
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            break
        if not text.startswith(TOOL_OPEN, pos):
            return None  # text after a tool call: not a clean call
        end = text.find(TOOL_CLOSE, pos + len(TOOL_OPEN))
        if end < 0:
            return None  # unterminated
        bodies.append(text[pos + len(TOOL_OPEN) : end])
        pos = end + len(TOOL_CLOSE)
    calls = []
    for body in bodies:
        try:
            obj = json.loads(body)
        except (ValueError, RecursionError):
            return None
        if not isinstance(obj, dict) or set(obj) - {"name", "arguments"}:
            return None
        if not isinstance(obj.get("name"), str) or obj["name"] not in tool_names:
            return None
        args = obj.get("arguments", {})
        if isinstance(args, str):
            try:
                if not isinstance(json.loads(args), dict):
                    return None
            except (ValueError, RecursionError):
                return None
        elif isinstance(args, dict):
            args = json.dumps(args, ensure_ascii=False)
        else:
            return None
        calls.append({"name": obj["name"], "arguments": args})
    content = text[:start]
    if content.endswith("\n"):
        content = content[:-1]  # the separator the templates write before a call
    return (content if content.strip() else None), calls


def forced_call(text: str, opening: str, name: str) -> dict[str, str]:
    """The call of a turn the server opened as a call of ``name`` (``opening`` ends with the brace that
    opens its arguments): the arguments object the policy wrote, or, when it wrote no valid one, its
    text up to the closing tag. Such arguments are not JSON, as OpenAI's own ``arguments`` may not be:
    the world answers the call with a tool error, and the call still counts as made."""
    body = text[len(opening) - 1 :]
    end = body.find(TOOL_CLOSE)
    body = body[:end] if end >= 0 else body
    try:
        value, stop = json.JSONDecoder().raw_decode(body)
        if isinstance(value, dict):
            return {"name": name, "arguments": body[:stop]}
    except (ValueError, RecursionError):
        pass
    return {"name": name, "arguments": body.strip()}


def tool_call_entries(
    calls: list[dict[str, str]], seed: int | None, prompt: Sequence[int], ids: Sequence[int]
) -> list[dict[str, object]]:
    """OpenAI ``tool_calls`` entries (``call_<24 hex>`` ids) for parsed calls.

    Seeded: the ids follow from the seed, the prompt and the output, so the same seed gives the same
    response; unseeded, from a random nonce.
    """
    nonce = str(seed) if seed is not None else secrets.token_hex(8)
    digest = hashlib.sha256(json.dumps([nonce, list(prompt), list(ids)]).encode()).hexdigest()
    return [
        {
            "id": f"call_{hashlib.sha256(f'{digest}:{k}'.encode()).hexdigest()[:24]}",
            "type": "function",
            "function": call,
        }
        for k, call in enumerate(calls)
    ]
