"""The benchmark registry: one class per benchmark, found by the name a trial input carries."""

from __future__ import annotations

import pytest

from mockworld_eval import benchmarks, contract
from mockworld_eval.benchmarks import Benchmark, UnknownBenchmark
from mockworld_eval.outcome import InputError


def test_the_registry_serves_exactly_the_contracts_benchmarks():
    assert set(benchmarks.names()) == set(contract.benchmarks())
    assert benchmarks.get("bfcl").groups == contract.BFCL_CATEGORIES
    assert benchmarks.get("tau2").groups == contract.TAU2_DOMAINS
    assert benchmarks.get("bfcl").name == "bfcl"


def test_an_unknown_name_is_a_bad_input_listing_the_known_ones():
    with pytest.raises(UnknownBenchmark) as unknown:
        benchmarks.get("mmlu")
    assert isinstance(unknown.value, InputError)
    assert str(unknown.value) == "unknown benchmark 'mmlu' (known: bfcl, tau2)"


def test_a_name_is_registered_once(monkeypatch):
    monkeypatch.setattr(benchmarks, "_registry", dict(benchmarks._registry))

    with pytest.raises(ValueError, match="registered twice"):

        @benchmarks.register("bfcl")
        class Again(Benchmark):
            def task_ids(self, group, split):
                return []

            def data_version(self, group):
                return {}

            def run_trial(self, spec, on_step):
                raise NotImplementedError

    @benchmarks.register("toy")
    class Toy(Benchmark):
        groups = ("only",)

        def task_ids(self, group, split):
            return ["a", "b"]

        def data_version(self, group):
            return {"release": "1"}

        def run_trial(self, spec, on_step):
            raise NotImplementedError

    assert benchmarks.get("toy").task_ids("only", "base") == ["a", "b"]
    with pytest.raises(InputError, match="no ground-truth replay plans"):
        benchmarks.get("toy").replay_plans("only", ["a"])


def test_data_versions_are_the_benchmarks_own():
    from mockworld_eval.versions import data_version

    assert set(data_version("bfcl", "multi_turn_base")) == {"entries", "ground_truth", "func_docs"}
    assert data_version("tau2", "airline")["release"].startswith("2025-06")
