"""`compute_score` for verl's reward path (`reward.custom_reward_function.path`).

The reward of a mockworld trajectory is the judge's verdict on its transcript against the task's
rubric, R = I(no forbidden) * mean(sub-goal fraction, interaction fraction) (seed 000, eq. 5). The
`mockworld_agent` loop has the world service judge every finished trajectory and sets it as the
rollout's score; verl hands that verdict to a reward function in `extra_info` (the loop's
`extra_fields`), and this function returns it. A row the loop did not judge has no reward here:
scoring the decoded response text alone would be a different reward, so it is an error.
"""

from __future__ import annotations

import math
from typing import Any


def compute_score(
    data_source: str, solution_str: str, ground_truth: str, extra_info: dict[str, Any] | None = None, **kwargs: Any
) -> dict[str, Any]:
    judged = (extra_info or {}).get("mockworld")
    if not isinstance(judged, dict) or "reward" not in judged:
        raise ValueError(
            f"no mockworld verdict for this {data_source} row: mockworld rows are judged by the "
            "mockworld_agent loop (agent_name: mockworld_agent, rollout.agent.agent_loop_config_path)"
        )
    reward = float(judged["reward"])
    if not math.isfinite(reward) or not 0.0 <= reward <= 1.0:
        raise ValueError(f"the world's reward {reward!r} is not in [0, 1]")
    return {"score": reward, "world_session": judged.get("session_id", "")}
