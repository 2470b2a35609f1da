"""The metrics against hand computations (metrics.py says what each one is)."""

from __future__ import annotations

import math

import numpy as np

import pytest

from mockworld_eval.contract import SummarizeInput
from mockworld_eval.metrics import sign_flip_p_value, summarize


def rows(benchmark: str, group: str, rewards_by_task: dict[str, list[float]]) -> list[dict]:
    return [
        {
            "benchmark": benchmark,
            "task_group": group,
            "task_id": task,
            "trial": i,
            "reward": reward,
            "termination": "user_stop",
            "failure": None,
            "prompt_tokens": 10,
            "completion_tokens": 2,
            "config_hash": "h",
        }
        for task, rewards in rewards_by_task.items()
        for i, reward in enumerate(rewards)
    ]


SPEC = SummarizeInput(evaluationId="e", bootstrapSamples=500, seed=7)


def test_pass_hat_k_and_avg_at_k_by_hand():
    # Task a: 3 of 4 trials succeed; b: 4 of 4; c: 0 of 4. pass^k(task) = C(c, k) / C(n, k).
    # A reward within 1e-6 of 1 is a success (tau2's is_successful); 0.5 is not.
    data = rows("tau2", "airline", {"a": [1, 1, 0, 0.9999999], "b": [1, 1, 1, 1], "c": [0, 0.5, 0, 0]})
    group = summarize(data, None, SPEC)["groups"][0]
    assert group["k"] == 4 and group["tasks"] == 3 and group["trials"] == 12
    expected = {
        1: (3 / 4 + 1 + 0) / 3,
        2: (math.comb(3, 2) / math.comb(4, 2) + 1 + 0) / 3,  # (0.5 + 1 + 0) / 3
        3: (math.comb(3, 3) / math.comb(4, 3) + 1 + 0) / 3,  # (0.25 + 1 + 0) / 3
        4: (0 + 1 + 0) / 3,
    }
    for k, value in expected.items():
        assert group["passHatK"][str(k)] == pytest.approx(value)
    assert group["avgAtK"] == pytest.approx((2 + 0.9999999 + 4 + 0.5) / 12)
    lo, hi = group["avgAtKCi"]
    assert 0 <= lo <= group["avgAtK"] <= hi <= 1
    assert group["terminations"] == {"user_stop": 12}


def test_bfcl_overall_is_the_unweighted_mean_of_categories():
    categories = ["multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context"]
    data = rows("bfcl", categories[0], {"x": [1], "y": [0]})
    for category in categories[1:]:
        data += rows("bfcl", category, {f"{category}-z": [1]})
    overall = summarize(data, None, SPEC)["bfclOverall"]
    assert overall["accuracy"] == pytest.approx((0.5 + 1.0 + 1.0 + 1.0) / 4)  # not 4/5, the trial-weighted mean
    assert overall["complete"] is True and overall["missing"] == []
    lo, hi = overall["ci"]
    assert lo <= overall["accuracy"] <= hi


def test_bfcl_overall_with_a_missing_category_is_not_the_mean_of_the_others():
    data = rows("bfcl", "multi_turn_base", {"x": [1], "y": [0]}) + rows("bfcl", "multi_turn_miss_func", {"z": [1]})
    overall = summarize(data, None, SPEC)["bfclOverall"]
    assert overall["accuracy"] is None and overall["ci"] is None
    assert overall["categories"] == ["multi_turn_base", "multi_turn_miss_func"]
    assert overall["missing"] == ["multi_turn_miss_param", "multi_turn_long_context"]
    assert overall["complete"] is False


def test_avg_at_k_with_unequal_trials_is_the_mean_of_task_means():
    # Task a ran 4 trials (all succeed), b one (failed): the seed's Avg@k is (1 + 0) / 2, not 4/5.
    group = summarize(rows("tau2", "retail", {"a": [1, 1, 1, 1], "b": [0]}), None, SPEC)["groups"][0]
    assert group["avgAtK"] == pytest.approx(0.5)
    assert group["equalTrials"] is False and group["k"] == 1
    lo, hi = group["avgAtKCi"]
    assert lo == pytest.approx(0) and hi == pytest.approx(1)  # resampled over the same two task means


def test_bootstrap_is_seeded_and_shrinks_with_more_tasks():
    few = rows("tau2", "retail", {str(i): [i % 2] for i in range(10)})
    many = rows("tau2", "retail", {str(i): [i % 2] for i in range(400)})
    first, again = summarize(few, None, SPEC), summarize(few, None, SPEC)
    assert first["groups"][0]["avgAtKCi"] == again["groups"][0]["avgAtKCi"]
    width = lambda s: s["groups"][0]["avgAtKCi"][1] - s["groups"][0]["avgAtKCi"][0]  # noqa: E731
    assert width(summarize(many, None, SPEC)) < width(first)


def test_paired_comparison_on_common_tasks():
    mine = rows("tau2", "telecom", {"a": [1, 1], "b": [1, 0], "c": [0, 0], "only-mine": [1, 1]})
    theirs = rows("tau2", "telecom", {"a": [0, 0], "b": [1, 0], "c": [0, 0]})
    spec = SummarizeInput(evaluationId="e", compareWith="other", bootstrapSamples=500)
    comparison = summarize(mine, theirs, spec)["comparison"]
    assert comparison["against"] == "other"
    (group,) = comparison["groups"]
    assert group["tasks"] == 3
    assert group["difference"] == pytest.approx((1 + 0 + 0) / 3)
    lo, hi = group["ci"]
    assert 0 <= lo <= group["difference"] <= hi <= 1
    # One task of three moved: every sign pattern moves the mean as far, so nothing is shown.
    assert group["pValue"] == 1
    same = summarize(theirs, theirs, spec)["comparison"]["groups"][0]
    assert same["difference"] == 0 and same["ci"] == [0, 0] and same["pValue"] == 1


def test_sign_flip_p_value_exact_and_monte_carlo():
    rng = np.random.default_rng(0)
    # Exact: 6 tasks all +1: only the all-plus and all-minus patterns are as extreme (2 of 64).
    assert sign_flip_p_value([1.0] * 6, 1000, rng) == pytest.approx(2 / 64)
    # Monte Carlo past 16 tasks: 40 tasks all improved is far below 0.05, a balanced set is not.
    assert sign_flip_p_value([0.5] * 40, 2000, rng) < 0.001
    assert sign_flip_p_value([0.5, -0.5] * 20, 2000, rng) > 0.5
