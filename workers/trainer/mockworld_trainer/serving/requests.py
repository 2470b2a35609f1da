"""The chat completion requests the policy server takes, validated at its boundary, and its error answer.

``temperature`` (0 = greedy), ``top_p``, ``max_tokens`` / ``max_completion_tokens``, ``seed``, ``n``,
``messages`` and ``tools``. Samples come from the policy's own distribution (what GRPO assumes), so
options that would change it (stop strings, penalties, logit bias, a constrained format or a forced
tool) or the wire format (streaming, log-probs) are refused with a 400 naming each field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..model import ROLES

MAX_N = 16


class ApiError(Exception):
    """Answered as OpenAI's error body ``{"error": {"message", "type", "param", "code"}}`` with ``status``."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code

    def body(self) -> dict[str, Any]:
        kind = "server_error" if self.status >= 500 else "invalid_request_error"
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}


@dataclass(frozen=True)
class ChatRequest:
    """A validated chat completion request."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    tool_names: frozenset[str]
    parse_tool_calls: bool
    # tool_choice "required" or a named function: the turn must be a tool call (of `call_name`, if set).
    call_required: bool = False
    call_name: str | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int | None = None
    seed: int | None = None
    n: int = 1


def _number(body: dict[str, Any], key: str, errors: list[tuple[str, str]], default: float) -> float:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        errors.append((key, f"expected a finite number, got {value!r}"))
        return default
    return float(value)


def _integer(body: dict[str, Any], key: str, errors: list[tuple[str, str]]) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if type(value) is not int:
        errors.append((key, f"expected an integer, got {value!r}"))
        return None
    return value


def _check_messages(messages: Any, errors: list[tuple[str, str]]) -> None:
    if not isinstance(messages, list) or not messages:
        errors.append(("messages", "expected a non-empty list of chat messages"))
        return
    for j, m in enumerate(messages):
        where = f"messages[{j}]"
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            errors.append((f"{where}.role", f"expected one of {', '.join(ROLES)}"))
            continue
        if not isinstance(m.get("content"), str | list | type(None)):
            errors.append((f"{where}.content", "expected a string, a list of content parts or null"))
        calls = m.get("tool_calls")
        if calls is not None:
            if m["role"] != "assistant" or not isinstance(calls, list):
                errors.append((f"{where}.tool_calls", "expected a list, on an assistant message"))
                continue
            for k, c in enumerate(calls):
                fn = c.get("function") if isinstance(c, dict) else None
                if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                    errors.append((f"{where}.tool_calls[{k}].function.name", "expected a string"))


def _check_tools(tools: Any, errors: list[tuple[str, str]]) -> list[str]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        errors.append(("tools", "expected a list of function tools"))
        return []
    names = []
    for j, t in enumerate(tools):
        fn = t.get("function") if isinstance(t, dict) else None
        if not isinstance(t, dict) or t.get("type") != "function" or not isinstance(fn, dict):
            errors.append((f"tools[{j}]", 'expected {"type": "function", "function": {"name": ...}}'))
        elif not isinstance(fn.get("name"), str) or not fn["name"]:
            errors.append((f"tools[{j}].function.name", "expected a non-empty string"))
        else:
            names.append(fn["name"])
    return names


def _check_tool_choice(choice: Any, names: list[str], errors: list[tuple[str, str]]) -> tuple[bool, str | None]:
    """(call required, the function it must call or None) of OpenAI's ``tool_choice``."""
    if choice in (None, "auto", "none"):
        return False, None
    if choice == "required":
        if not names:
            errors.append(("tool_choice", "'required' needs tools"))
        return True, None
    fn = choice.get("function") if isinstance(choice, dict) and choice.get("type") == "function" else None
    name = fn.get("name") if isinstance(fn, dict) else None
    if not isinstance(name, str):
        errors.append(
            ("tool_choice", "expected 'auto', 'none', 'required' or {'type': 'function', 'function': {'name': ...}}")
        )
        return False, None
    if name not in names:
        errors.append(("tool_choice.function.name", f"{name!r} is not one of the request's tools"))
    return True, name


def parse_chat_request(body: Any) -> ChatRequest:
    """Validates a chat completion body; every bad path is named in one 400."""
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    errors: list[tuple[str, str]] = []
    _check_messages(body.get("messages"), errors)
    names = _check_tools(body.get("tools"), errors)
    tool_choice = body.get("tool_choice")
    call_required, call_name = _check_tool_choice(tool_choice, names, errors)
    temperature = _number(body, "temperature", errors, 1.0)
    if temperature < 0:
        errors.append(("temperature", "must be >= 0 (0 is greedy)"))
    top_p = _number(body, "top_p", errors, 1.0)
    if not 0 < top_p <= 1:
        errors.append(("top_p", "must be in (0, 1]"))
    max_tokens = _integer(body, "max_completion_tokens", errors)
    if max_tokens is None:
        max_tokens = _integer(body, "max_tokens", errors)
    if max_tokens is not None and max_tokens < 1:
        errors.append(("max_tokens", "must be >= 1"))
    seed = _integer(body, "seed", errors)
    if seed is not None and not -(2**63) <= seed < 2**64:
        errors.append(("seed", "must fit in 64 bits"))
    n = _integer(body, "n", errors)
    n = 1 if n is None else n
    if not 1 <= n <= MAX_N:
        errors.append(("n", f"must be in 1..{MAX_N}"))
    # Options that would change what is sampled away from the policy's distribution, or the wire format.
    if body.get("stream"):
        errors.append(("stream", "streaming is not supported"))
    if body.get("stop"):
        errors.append(("stop", "stop sequences are not supported; the policy stops at its end-of-turn token"))
    if body.get("logprobs"):
        errors.append(("logprobs", "not supported (the trainer recomputes log-probs)"))
    for key in ("frequency_penalty", "presence_penalty"):
        if _number(body, key, errors, 0.0) != 0:
            errors.append((key, "not supported: it would sample from something other than the policy"))
    if body.get("logit_bias"):
        errors.append(("logit_bias", "not supported: it would sample from something other than the policy"))
    fmt = body.get("response_format")
    if fmt is not None and not (isinstance(fmt, dict) and fmt.get("type") == "text"):
        errors.append(("response_format", "only {'type': 'text'} is supported"))
    if errors:
        raise ApiError(400, "invalid request: " + "; ".join(f"{p}: {m}" for p, m in errors), param=errors[0][0])
    tools = body.get("tools") or None
    return ChatRequest(
        messages=body["messages"],
        tools=tools,
        tool_names=frozenset(names),
        parse_tool_calls=bool(names) and tool_choice != "none",
        call_required=call_required,
        call_name=call_name,
        temperature=temperature,
        top_p=top_p,
        max_tokens=max_tokens,
        seed=seed,
        n=n,
    )
