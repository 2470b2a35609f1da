"""A trial's outcome, and how a failure inside a trial is classified."""

from __future__ import annotations

import json
import os
import re
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from .contract import Endpoint


@dataclass
class Outcome:
    reward: float
    # completed / max_steps (BFCL); tau2's termination reason (user_stop, agent_stop, max_steps,
    # too_many_errors, agent_error, user_error); model_error when the policy or user model failed.
    termination: str
    steps: int
    prompt_tokens: int
    completion_tokens: int
    trajectory: Any
    # The model error that ended the trial (the trial is scored 0 and not retried).
    failure: Optional[str] = None
    # Why the benchmark's checker did not give full reward (BFCL's error type and message).
    detail: Optional[str] = None
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def endpoint_key(endpoint: Endpoint) -> tuple[str, str]:
    """Base URL and API key. OpenAI clients refuse an empty key, so a keyless endpoint gets a
    placeholder, as vLLM and llama.cpp servers accept."""
    if endpoint.api_key_env is None:
        return endpoint.base_url, "EMPTY"
    key = os.environ.get(endpoint.api_key_env)
    if not key:
        raise InputError(f"the endpoint's key variable {endpoint.api_key_env} is not set on the evaluation worker")
    return endpoint.base_url, key


class InputError(Exception):
    """The trial cannot run as asked (unknown task, missing key): retrying cannot help."""


# Failures of reaching the model rather than of the model: the activity is retried. Matched by class
# name over the exception chain and MROs, so both openai's and litellm's classes (and httpx's) count.
_TRANSIENT = {
    "APIConnectionError",
    "APITimeoutError",
    "Timeout",
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailableError",
    "BadGatewayError",
    "ConnectError",
    "ConnectTimeout",
    "ReadTimeout",
    "RemoteProtocolError",
    "ConnectionError",
    "TimeoutError",
}


def is_transient(error: BaseException) -> bool:
    """Whether no answer of the model arrived: the endpoint could not be reached, timed out, was
    overloaded, cut the response off, or sent a body that is not JSON. The same fault is classified
    the same for both benchmarks, whichever client's class carries it: openai raises the bare
    JSONDecodeError of a 200 whose body is not JSON where litellm wraps it in an
    InternalServerError, so the decode error is recognised by where it was raised (reading the HTTP
    response), not by its class alone: a model's tool-call arguments that are not JSON are an
    answer, scored by the benchmark."""
    seen: set[int] = set()
    current: Optional[BaseException] = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if any(cls.__name__ in _TRANSIENT for cls in type(current).__mro__):
            return True
        if isinstance(current, json.JSONDecodeError) and _raised_reading_response(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def _raised_reading_response(error: BaseException) -> bool:
    """Raised while an HTTP client (httpx, and the copy the openai SDK vendors) decoded a response."""
    return any(
        frame.name == "json" and re.search(r"/httpx\w*/_models\.py$", frame.filename)
        for frame in traceback.extract_tb(error.__traceback__)
    )


def describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:4000]
