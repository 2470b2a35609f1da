"""Plays one task of a mockworld world through OpenEnv's own client; prints what it saw as JSON.

    python play_probe.py WORLD_URL TASK_ID EPISODE_ID

Run by test/integration/openenv.test.ts against the real world service.
"""

from __future__ import annotations

import json
import sys

from openenv.core import GenericEnvClient

TURNS = [
    {"tool_calls": [{"name": "lookup_record", "arguments": {"id": "R-0"}}]},
    {"tool_calls": [{"name": "ask_user", "arguments": {"question": "Which state should record R-0 have?"}}]},
    {"content": "Record R-0 is fixed."},
]


def main(world_url: str, task_id: str, episode_id: str) -> None:
    with GenericEnvClient(base_url=world_url) as env:
        reset = env.reset(task_id=task_id, episode_id=episode_id)
        steps = []
        for action in TURNS:
            result = env.step(action)
            steps.append({"observation": result.observation, "reward": result.reward, "done": result.done})
            if result.done:
                break
        state = env.state()
    print(json.dumps({"reset": reset.observation, "steps": steps, "state": state}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
