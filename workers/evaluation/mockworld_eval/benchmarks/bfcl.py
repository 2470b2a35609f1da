"""BFCL-V4 multi-turn (bfcl-eval): the four multi-turn categories, run through BFCL's own handler
and checker (bfcl_trial.py), replayed from its ground truth (replay.py)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Callable

from ..contract import BFCL_CATEGORIES
from ..versions import package_dir, sha256
from . import Benchmark, register

if TYPE_CHECKING:
    from ..contract import TrialInput
    from ..outcome import Outcome


@register("bfcl")
class Bfcl(Benchmark):
    groups = BFCL_CATEGORIES

    def task_ids(self, group: str, split: str) -> list[str]:
        """The category's entry ids in BFCL's order (BFCL has no splits: `split` is not used)."""
        from ..bfcl_trial import entry_ids

        return entry_ids(group)

    def data_version(self, group: str) -> dict[str, str]:
        """sha256 of the category's entries, its ground truth and the function docs of its classes."""
        data = package_dir("bfcl_eval") / "data"
        files = {
            "entries": data / f"BFCL_v4_{group}.json",
            "ground_truth": data / "possible_answer" / f"BFCL_v4_{group}.json",
        }
        out = {name: sha256(path) for name, path in files.items()}
        docs = sorted((data / "multi_turn_func_doc").glob("*.json"))
        out["func_docs"] = hashlib.sha256("".join(sha256(p) for p in docs).encode()).hexdigest()
        return out

    def run_trial(self, spec: "TrialInput", on_step: Callable[[int], None]) -> "Outcome":
        from .. import bfcl_trial

        return bfcl_trial.run(spec, on_step)

    def replay_plans(self, group: str, task_ids: list[str]) -> dict[str, dict]:
        from ..replay import bfcl_plans

        return bfcl_plans(group, task_ids)
