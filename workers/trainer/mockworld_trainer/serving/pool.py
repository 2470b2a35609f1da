"""Many runs from one server: model names, the runs on disk, and a bounded pool of PolicyHolders.

A request's ``model`` names the run: ``"<run_id>"`` for its newest applied step (reloaded as in
reload.py), ``"<run_id>@<step>"`` for exactly that applied step while its weights are on disk (``@0``: the
base model), never reloaded. Holders are made on first use; at most ``max_loaded`` are loaded, the least
recently used idle one is unloaded to make room, and one that is generating is never unloaded (a request
waits instead).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from urllib.parse import unquote

from ..checkpoint import CheckpointStore
from ..errors import BadRequestError
from .reload import PolicyHolder

log = logging.getLogger("mockworld.policy_server")

ModelKey = tuple[str, int | None]  # (run id, pinned step; None: the newest applied step)
LISTED_IN_ERRORS = 50  # run ids named in a 404 before "and N more"


def parse_model_name(name: str) -> ModelKey:
    """``"<run_id>"`` -> (run_id, None); ``"<run_id>@<step>"`` (ASCII digits after the last ``@``) -> (run_id, step)."""
    run_id, sep, tail = name.rpartition("@")
    if sep and run_id and tail.isascii() and tail.isdigit():
        return run_id, int(tail)
    return name, None


def list_runs(store: CheckpointStore) -> list[str]:
    """The run ids under the checkpoint root: directories with a run.json or an applied step, sorted."""
    try:
        entries = list(os.scandir(store.root))
    except (FileNotFoundError, NotADirectoryError):
        return []
    runs = []
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        run_id = unquote(entry.name)
        try:
            if store.run_dir(run_id).name != entry.name:
                continue  # not a name the store writes (e.g. an unquoted '%'): not a run
        except BadRequestError:
            continue
        if os.path.exists(os.path.join(entry.path, "run.json")) or store.applied_steps(run_id):
            runs.append(run_id)
    return sorted(runs)


def servable_steps(store: CheckpointStore, run_id: str, applied: Sequence[int] | None = None) -> list[int]:
    """Applied steps of a run whose weights are still on disk, ascending (0, the base model, when run.json exists)."""
    applied = store.applied_steps(run_id) if applied is None else applied
    steps = [s for s in applied if (store.step_dir(run_id, s) / "model" / "config.json").exists()]
    return ([0] if (store.run_dir(run_id) / "run.json").exists() else []) + steps


class _Slot:
    """One pool entry: the holder once loaded (or the error that loading raised) and the requests using it."""

    __slots__ = ("error", "holder", "ready", "users")

    def __init__(self) -> None:
        self.holder: PolicyHolder | None = None
        self.error: BaseException | None = None
        self.ready = threading.Event()
        self.users = 1  # the request that created it


class PolicyPool:
    """PolicyHolders of many runs, created on first use, at most ``max_loaded`` at once; thread-safe.

    Keyed by ``(run_id, pinned step or None)``. A request ``use()``s one holder while it generates; a holder in
    use is never evicted, so no more than ``max_loaded`` holders exist (each holds one policy, plus, for a
    newest-step holder that just swapped, the previous step until the requests that started on it finish).
    To make room the least recently used idle holder is dropped; when all are in use, the request waits.
    A holder is built outside the pool's lock, so a load does not hold up requests for loaded runs.
    """

    def __init__(self, make: Callable[[str, int | None], PolicyHolder], max_loaded: int) -> None:
        if max_loaded < 1:
            raise BadRequestError(f"--max-loaded-runs must be >= 1, got {max_loaded}")
        self._make, self.max_loaded = make, max_loaded
        self._cond = threading.Condition()
        self._slots: OrderedDict[ModelKey, _Slot] = OrderedDict()  # least recently used first
        self.created = 0
        self.evicted = 0

    @contextmanager
    def use(self, key: ModelKey) -> Iterator[PolicyHolder]:
        """The holder of ``key``, loaded now if it is not; it stays loaded until the ``with`` block ends."""
        slot, create = self._acquire(key)
        try:
            if create:
                try:
                    slot.holder = self._make(*key)
                except BaseException as e:
                    with self._cond:
                        slot.error = e
                        if self._slots.get(key) is slot:
                            del self._slots[key]
                    raise
                finally:
                    slot.ready.set()
                with self._cond:
                    self.created += 1
            else:
                slot.ready.wait()
                if slot.error is not None:
                    raise slot.error
            assert slot.holder is not None
            yield slot.holder
        finally:
            with self._cond:
                slot.users -= 1
                self._cond.notify_all()

    def loaded(self) -> list[tuple[ModelKey, PolicyHolder]]:
        """The loaded holders, least recently used first."""
        with self._cond:
            return [(k, s.holder) for k, s in self._slots.items() if s.holder is not None]

    def _acquire(self, key: ModelKey) -> tuple[_Slot, bool]:
        with self._cond:
            while True:
                slot = self._slots.get(key)
                if slot is not None:
                    slot.users += 1
                    self._slots.move_to_end(key)
                    return slot, False
                if len(self._slots) < self.max_loaded:
                    slot = self._slots[key] = _Slot()
                    return slot, True
                idle = next((k for k, s in self._slots.items() if s.users == 0), None)
                if idle is None:
                    self._cond.wait()  # every holder is generating; the first to finish frees one
                    continue
                del self._slots[idle]
                self.evicted += 1
                log.info("unloaded %s to make room for %s (--max-loaded-runs %d)",
                         model_name(idle), model_name(key), self.max_loaded)


def model_name(key: ModelKey) -> str:
    """The request ``model`` that names ``key``."""
    return key[0] if key[1] is None else f"{key[0]}@{key[1]}"
