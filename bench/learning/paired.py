"""The evaluation worker's summary and paired test (mockworld_eval.metrics) of two held-out runs.

Reads {"before": rows, "after": rows} on stdin, each row {task_id, reward}, and prints
{"before": {avgAtK, avgAtKCi, passHatK}, "after": {...}, "difference", "ci", "pValue"}: the same
estimators and sign-flip test an Evaluation's `compareWith` reports (bench/learning-mock-world.ts).
"""

import json
import sys

from mockworld_eval.contract import SummarizeInput
from mockworld_eval.metrics import summarize

GROUP = ("mockworld", "tool-tasks-heldout")


def trial_rows(rows):
    return [
        {
            "benchmark": GROUP[0],
            "task_group": GROUP[1],
            "task_id": row["task_id"],
            "reward": row["reward"],
            "termination": "rules",
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "config_hash": "bench",
        }
        for row in rows
    ]


def main() -> None:
    data = json.load(sys.stdin)
    spec = SummarizeInput(evaluationId="after", compareWith="before", bootstrapSamples=10_000)
    before, after = trial_rows(data["before"]), trial_rows(data["after"])
    base = summarize(before, None, spec)["groups"][0]
    trained = summarize(after, before, spec)
    comparison = trained["comparison"]["groups"][0]
    pick = lambda g: {"avgAtK": g["avgAtK"], "avgAtKCi": g["avgAtKCi"], "passHatK": g["passHatK"]}  # noqa: E731
    print(
        json.dumps(
            {
                "before": pick(base),
                "after": pick(trained["groups"][0]),
                "difference": comparison["difference"],
                "ci": comparison["ci"],
                "pValue": comparison["pValue"],
            }
        )
    )


if __name__ == "__main__":
    main()
