"""mockworld's verl adapter: verl rollouts in the mock world (docs/verl.md).

`agent_loop` registers the `mockworld_agent` loop, `tools` the world's tools and `ask_user`,
`reward` the `compute_score` of verl's reward path, `world_client` the world service over HTTP.
Its YAML files for verl's GRPO trainer are in `config/` (`config_path()` finds them).
"""

from pathlib import Path

__all__ = ["config_path"]


def config_path(name: str) -> str:
    """The path of one of the adapter's YAML files (agent_loop.yaml, tool_config.yaml)."""
    return str(Path(__file__).parent / "config" / name)
