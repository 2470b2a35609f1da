"""The policy server's Prometheus series, served at its own ``GET /metrics`` (no second port): requests
by route and outcome with their latency, tokens read and generated, and weight loads (a new step
picked up, or a run loaded into the pool). Labels are route names, never run ids or model names, so a
caller cannot grow the series.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

REGISTRY = CollectorRegistry()

REQUEST_SECONDS = Histogram(
    "mockworld_policy_request_duration_seconds",
    "Policy server requests by route and outcome (ok, client_error, error), with their latency.",
    ["route", "outcome"],
    # A chat completion takes from milliseconds (a tiny model) to minutes (a long answer on CPU).
    buckets=(0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
    registry=REGISTRY,
)
TOKENS = Counter(
    "mockworld_policy_tokens_total", "Tokens of answered chat completions by kind (prompt, completion).",
    ["kind"], registry=REGISTRY,
)  # fmt: skip
WEIGHT_LOADS = Counter(
    "mockworld_policy_weight_loads_total", "Weights loaded: a run's newer step, or a run into the pool.",
    registry=REGISTRY,
)  # fmt: skip

CONTENT_TYPE = CONTENT_TYPE_LATEST


def exposition() -> bytes:
    """The series in Prometheus' text format."""
    return generate_latest(REGISTRY)


def route_of(method: str, path: str) -> str:
    """The route label of a request path: one of the server's routes, or ``other``."""
    if path == "/v1/chat/completions":
        return "chat" if method == "POST" else "other"
    if path == "/v1/models" or path.startswith("/v1/models/"):
        return "models"
    if path in ("/health", "/v1/health", "/metrics"):
        return path.rsplit("/", 1)[-1]
    return "other"


def outcome_of(status: int) -> str:
    return "ok" if status < 400 else "client_error" if status < 500 else "error"
