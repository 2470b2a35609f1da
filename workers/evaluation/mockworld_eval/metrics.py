"""Scores as the benchmarks define them, from the stored trials.

- Avg@k: the mean over tasks of each task's mean reward (the seed paper's Avg@4; tau2's `avg_reward`
  when every task has k trials). With unequal trial counts a task with more trials weighs no more,
  and the interval is over the same per-task means.
- pass^k for k = 1..trials: per task tau2's own `pass_hat_k(n, successes, k)` (success is tau2's
  `is_successful`: reward 1 within 1e-6), averaged over tasks. BFCL has one trial officially; with
  more, the same estimator is applied to its valid/invalid outcomes.
- BFCL multi-turn overall: the unweighted mean of the four categories' accuracies (the leaderboard's
  multi-turn column). With a category missing it is N/A (accuracy and interval null, the missing
  ones named), never the mean of the categories present.
- Confidence intervals: percentile bootstrap over tasks (trials of a task stay together), seeded.
- Paired comparison: on the tasks both runs have, the mean per-task difference (this run minus the
  other) with a paired bootstrap interval over those tasks, and the two-sided p-value of a paired
  sign-flip permutation test of "no difference" (exact up to 16 tasks, else Monte Carlo).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Callable, Optional, Sequence

import numpy as np

from .contract import BFCL_CATEGORIES, SummarizeInput


def _tau2_estimators():
    from . import environment

    environment.prepare()
    from tau2.metrics.agent_metrics import is_successful, pass_hat_k

    return is_successful, pass_hat_k


def _by_task(rows: Sequence[dict]) -> dict[tuple[str, str], dict[str, list[float]]]:
    grouped: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        grouped[(row["benchmark"], row["task_group"])][row["task_id"]].append(float(row["reward"]))
    return grouped


def _interval(values: np.ndarray, confidence: float) -> list[float]:
    tail = (1 - confidence) / 2
    return [float(np.quantile(values, tail)), float(np.quantile(values, 1 - tail))]


def bootstrap(
    per_task: Sequence[float], statistic: Callable[[np.ndarray], float], samples: int, confidence: float, rng
) -> list[float]:
    """Percentile interval of `statistic` over task-level values resampled with replacement."""
    values = np.asarray(per_task, dtype=float)
    if len(values) == 0:
        return [float("nan"), float("nan")]
    draws = rng.integers(0, len(values), size=(samples, len(values)))
    return _interval(np.array([statistic(values[d]) for d in draws]), confidence)


def group_metrics(rewards_by_task: dict[str, list[float]], spec: SummarizeInput, rng) -> dict:
    is_successful, pass_hat_k = _tau2_estimators()
    tasks = sorted(rewards_by_task)
    k = min(len(rewards_by_task[t]) for t in tasks)
    all_rewards = [r for t in tasks for r in rewards_by_task[t]]
    per_task_mean = [float(np.mean(rewards_by_task[t])) for t in tasks]
    pass_k: dict[str, float] = {}
    pass_k_ci: dict[str, list[float]] = {}
    for j in range(1, k + 1):
        per_task = [
            pass_hat_k(len(rewards_by_task[t]), sum(is_successful(r) for r in rewards_by_task[t]), j) for t in tasks
        ]
        pass_k[str(j)] = float(np.mean(per_task))
        pass_k_ci[str(j)] = bootstrap(per_task, np.mean, spec.bootstrap_samples, spec.confidence, rng)
    return {
        "tasks": len(tasks),
        "trials": len(all_rewards),
        "k": k,
        "equalTrials": all(len(rewards_by_task[t]) == k for t in tasks),
        "avgAtK": float(np.mean(per_task_mean)),
        "avgAtKCi": bootstrap(per_task_mean, np.mean, spec.bootstrap_samples, spec.confidence, rng),
        "passHatK": pass_k,
        "passHatKCi": pass_k_ci,
    }


def bfcl_overall(grouped: dict, spec: SummarizeInput, rng) -> Optional[dict]:
    categories = [c for c in BFCL_CATEGORIES if ("bfcl", c) in grouped]
    if not categories:
        return None
    missing = [c for c in BFCL_CATEGORIES if c not in categories]
    if missing:
        return {"categories": categories, "complete": False, "missing": missing, "accuracy": None, "ci": None}
    per_category = [[float(np.mean(v)) for v in grouped[("bfcl", c)].values()] for c in categories]
    draws = []
    for _ in range(spec.bootstrap_samples):
        draws.append(np.mean([np.mean(np.asarray(v)[rng.integers(0, len(v), len(v))]) for v in per_category]))
    return {
        "categories": categories,
        "complete": True,
        "missing": [],
        "accuracy": float(np.mean([np.mean(v) for v in per_category])),
        "ci": _interval(np.array(draws), spec.confidence),
    }


EXACT_SIGN_FLIP_TASKS = 16  # 2^16 sign patterns: cheap to enumerate


def sign_flip_p_value(diffs: Sequence[float], samples: int, rng) -> float:
    """Two-sided p-value of mean(diffs) = 0 under the paired null: each task's difference is as likely
    negated. Exact over all sign patterns for few tasks; else ``samples`` random patterns with the
    observed one counted (Phipson & Smyth 2010), so p is never 0."""
    d = np.asarray(diffs, dtype=float)
    if len(d) == 0:
        return float("nan")
    observed = abs(d.mean()) - 1e-12  # ties count as at least as extreme
    if len(d) <= EXACT_SIGN_FLIP_TASKS:
        signs = 1 - 2 * ((np.arange(2 ** len(d))[:, None] >> np.arange(len(d))) & 1)  # (2^n, n)
        return float(np.mean(np.abs(signs @ d / len(d)) >= observed))
    signs = rng.choice([-1.0, 1.0], size=(samples, len(d)))  # (samples, n)
    extreme = int(np.sum(np.abs(signs @ d / len(d)) >= observed))
    return (extreme + 1) / (samples + 1)


def paired(mine: dict, theirs: dict, spec: SummarizeInput, rng) -> list[dict]:
    out = []
    for key in sorted(set(mine) & set(theirs)):
        common = sorted(set(mine[key]) & set(theirs[key]))
        if not common:
            continue
        diffs = [float(np.mean(mine[key][t]) - np.mean(theirs[key][t])) for t in common]
        out.append(
            {
                "benchmark": key[0],
                "group": key[1],
                "tasks": len(common),
                "difference": float(np.mean(diffs)),
                "ci": bootstrap(diffs, np.mean, spec.bootstrap_samples, spec.confidence, rng),
                "pValue": sign_flip_p_value(diffs, spec.bootstrap_samples, rng),
            }
        )
    return out


def summarize(rows: Sequence[dict], other: Optional[Sequence[dict]], spec: SummarizeInput) -> dict:
    rng = np.random.default_rng(spec.seed)
    grouped = _by_task(rows)
    groups = []
    for (benchmark, group), by_task in sorted(grouped.items()):
        mine = [r for r in rows if r["benchmark"] == benchmark and r["task_group"] == group]
        groups.append(
            {
                "benchmark": benchmark,
                "group": group,
                **group_metrics(by_task, spec, rng),
                "terminations": dict(Counter(r["termination"] for r in mine)),
                "modelErrors": sum(1 for r in mine if r.get("failure")),
                "promptTokens": int(sum(r["prompt_tokens"] for r in mine)),
                "completionTokens": int(sum(r["completion_tokens"] for r in mine)),
                "configHashes": len({r["config_hash"] for r in mine}),
            }
        )
    summary = {
        "evaluationId": spec.evaluation_id,
        "confidence": spec.confidence,
        "bootstrapSamples": spec.bootstrap_samples,
        "trials": len(rows),
        "groups": groups,
        "bfclOverall": bfcl_overall(grouped, spec, rng),
        "comparison": None,
    }
    if other is not None:
        summary["comparison"] = {
            "against": spec.compare_with,
            "groups": paired(grouped, _by_task(other), spec, rng),
        }
    return summary
