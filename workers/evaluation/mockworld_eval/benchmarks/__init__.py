"""The benchmarks this worker runs, by the name a trial input's ``benchmark`` carries.

Each is a module of this package with one class registered under its name::

    @register("bfcl")
    class Bfcl(Benchmark):
        groups = BFCL_CATEGORIES
        def task_ids(self, group, split): ...
        def data_version(self, group): ...
        def run_trial(self, spec, on_step): ...
        def replay_plans(self, group, task_ids): ...

and the worker reaches it only through ``get(name)`` (activities.py lists tasks, versions.py hashes
the data, trial.py runs a trial, replay.py writes ground-truth plans). The modules are found and
imported on first use, so adding a benchmark is adding its module; the contract's benchmark names
(schemas/evaluation-contract.ts ``EvalBenchmarkSchema``, emitted into schemas/json/eval/) must name
it too, and tests/test_benchmarks.py fails while the two differ.

The classes import their benchmark's packages inside their methods: the worker imports this package
before environment.prepare() has set what those packages read at import.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Callable, ClassVar, Optional, TypeVar

from ..outcome import InputError

if TYPE_CHECKING:
    from ..contract import TrialInput
    from ..outcome import Outcome


class Benchmark(ABC):
    """What the worker does with a benchmark. One instance per registered name."""

    #: the registered name (set by ``register``)
    name: ClassVar[str]
    #: its groups: BFCL's categories, tau2's domains
    groups: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def task_ids(self, group: str, split: str) -> list[str]:
        """The group's task ids, in the benchmark's order (InputError for an unknown group or split)."""

    @abstractmethod
    def data_version(self, group: str) -> dict[str, str]:
        """What identifies the group's data (file hashes, a release): stored with every trial and
        part of its config hash, so scores from different data are never mixed up."""

    @abstractmethod
    def run_trial(self, spec: "TrialInput", on_step: Callable[[int], None]) -> "Outcome":
        """Runs one trial through the benchmark's own code, in the trial's process (trial.py),
        calling ``on_step(n)`` at each model call. InputError: the trial cannot run as asked; any
        other exception is classified by trial.py (unreachable model: retried; else a model error)."""

    def replay_plans(self, group: str, task_ids: list[str]) -> dict[str, dict]:
        """Ground-truth replay plans by task id, for the scripted model server (replay.py)."""
        raise InputError(f"benchmark {self.name!r} has no ground-truth replay plans")


class UnknownBenchmark(InputError, KeyError):
    """No benchmark is registered under the name (retrying cannot help)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


_registry: dict[str, Benchmark] = {}
_discovered = False
_lock = threading.RLock()

B = TypeVar("B", bound=type[Benchmark])


def register(name: str) -> Callable[[B], B]:
    """Class decorator: registers an instance of the class as benchmark ``name``."""

    def decorate(cls: B) -> B:
        with _lock:
            if name in _registry:
                raise ValueError(
                    f"benchmark {name!r} is registered twice: {type(_registry[name]).__qualname__} and {cls.__qualname__}"
                )
            cls.name = name
            _registry[name] = cls()
        return cls

    return decorate


def _discover() -> None:
    """Imports every module of this package once (each registers its benchmark)."""
    global _discovered
    with _lock:
        if _discovered:
            return
        for module in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{module.name}")
        _discovered = True


def get(name: str) -> Benchmark:
    """The benchmark registered as ``name``; UnknownBenchmark, listing the known names, otherwise."""
    _discover()
    found: Optional[Benchmark] = _registry.get(name)
    if found is None:
        raise UnknownBenchmark(f"unknown benchmark {name!r} (known: {', '.join(names()) or 'none'})")
    return found


def names() -> tuple[str, ...]:
    """Every registered benchmark's name, sorted."""
    _discover()
    return tuple(sorted(_registry))
