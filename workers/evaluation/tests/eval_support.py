"""Helpers of the evaluation tests."""

from __future__ import annotations


def trial_input(url: str, benchmark: str, group: str, task_id: str, trial: int, **extra) -> dict:
    spec = {
        "evaluationId": extra.pop("evaluation_id", "pytest"),
        "benchmark": benchmark,
        "group": group,
        "taskId": task_id,
        "trial": trial,
        "trials": extra.pop("trials", 2),
        "policy": {"baseUrl": url, "model": "replay-policy"},
        **extra,
    }
    if benchmark == "tau2":
        spec.setdefault("user", {"baseUrl": url, "model": "replay-user"})
    return spec
