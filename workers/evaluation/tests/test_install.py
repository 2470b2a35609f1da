"""The venv is the lean closure pyproject.toml lists: nothing else is installed (the benchmarks'
declared vendor SDKs, torch and plotting stacks stay out), every listed pin is what is installed, and
the modules of the paths used import."""

from __future__ import annotations

import importlib
import importlib.util
import importlib.metadata
import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins() -> dict[str, str]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    out = {}
    for line in project["dependencies"] + project["optional-dependencies"]["test"]:
        name, version = line.split("==")
        out[normalize(name)] = version
    return out


def test_installed_is_exactly_the_pinned_closure():
    installed = {normalize(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()}
    extra = set(installed) - set(pins()) - {"pip", "setuptools", "mockworld-eval"}
    assert extra == set()
    assert {name: installed.get(name) for name in pins()} == pins()


def test_the_heavy_declared_dependencies_are_absent():
    for name in ("torch", "sentence-transformers", "faiss-cpu", "anthropic", "boto3", "qwen-agent", "matplotlib", "scikit-learn"):
        assert importlib.util.find_spec(name.replace("-", "_")) is None, name


def test_the_modules_used_import():
    importlib.import_module("mockworld_eval.preload")
