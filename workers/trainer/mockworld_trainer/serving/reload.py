"""Weight sync: one run's newest applied step, kept loaded and swapped in when the trainer applies a new one.

Each request stats the run directory (a step appears by an atomic rename into it, which changes its
mtime) and lists it when the mtime changed, is less than a second old, or ``reload_interval_s`` (0.5 s)
passed since the last listing. A newer step is loaded under a lock that new requests wait on, so they
are answered by the new policy; requests already generating keep their reference to the old model and
finish on it. A load that fails (weights pruned under it) keeps the old policy and is retried. A holder
made for one ``step`` serves exactly that step and never reloads.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import torch

from ..checkpoint import CheckpointStore
from ..config import ModelSpec, TinyModelSpec, parse_model_spec, parse_step_config, to_dict
from ..errors import BadRequestError
from ..lora import load_policy_model
from ..model import ByteTokenizer, ChatTemplateTokenizer, Policy, load_tokenizer
from . import metrics

log = logging.getLogger("mockworld.policy_server")

RECENT_MTIME_NS = 1_000_000_000  # a directory changed this recently may change again within one timestamp tick


@dataclass(frozen=True)
class Served:
    """One loaded step of the run; immutable, so a request that holds it is unaffected by a swap."""

    step: int
    policy: Policy
    spec: ModelSpec
    model_path: str | None  # the weights directory (None: a tiny model's step 0, built in code)
    stop_ids: frozenset[int]
    max_model_len: int
    loaded_at: float  # unix time


def stop_ids(policy: Policy) -> frozenset[int]:
    """Token ids that end an assistant turn: every special id of the byte tokenizer, else the eos ids."""
    if isinstance(policy.tokenizer, ByteTokenizer):
        return frozenset(range(256, ByteTokenizer.VOCAB_SIZE))
    ids: set[int] = set()
    hf = policy.tokenizer.hf if isinstance(policy.tokenizer, ChatTemplateTokenizer) else None
    candidates = [
        hf.eos_token_id if hf is not None else None,
        policy.model.config.eos_token_id,
        getattr(getattr(policy.model, "generation_config", None), "eos_token_id", None),
    ]
    for c in candidates:
        if isinstance(c, int):
            ids.add(c)
        elif isinstance(c, list | tuple):
            ids.update(i for i in c if isinstance(i, int))
    if not ids:
        raise BadRequestError("the model's tokenizer and config name no eos token: generation could never stop")
    return frozenset(ids)


class PolicyHolder:
    """Keeps the newest applied step of one run loaded (see the module docstring for when it looks), or,
    with ``step``, exactly that step, never reloaded. Thread-safe; the constructor loads the policy."""

    def __init__(
        self,
        store: CheckpointStore,
        run_id: str,
        base: ModelSpec | None,
        device: torch.device,
        *,
        reload_interval_s: float = 0.5,
        max_model_len: int | None = None,
        step: int | None = None,
    ) -> None:
        self.store, self.run_id, self.base, self.device = store, run_id, base, device
        self.run_dir = store.run_dir(run_id)  # validates run_id
        self.reload_interval_s = reload_interval_s
        self.max_model_len = max_model_len
        self.pinned_step = step
        self._lock = threading.Lock()
        self._mtime: int | None = None
        self._listed_at = -math.inf
        self._failed: tuple[int, float] | None = None  # (step, when) of the last failed load
        self._tokenizers: dict[str, Any] = {}
        self.loads = 0
        self._served: Served = self._load(self._latest_on_disk() if step is None else step)

    # --- public ---------------------------------------------------------------------------------
    @property
    def served(self) -> Served:
        """The policy now served, without looking for a newer one."""
        return self._served

    def current(self) -> Served:
        """The policy to answer a request with: the newest applied step, loaded now if it is new (a pinned
        holder: its step)."""
        if self.pinned_step is not None:
            return self._served
        with self._lock:
            latest = self._probe()
            if latest is not None and latest > self._served.step:
                failed = self._failed
                if failed is None or failed[0] != latest or time.monotonic() - failed[1] >= self.reload_interval_s:
                    try:
                        self._served = self._load(latest)
                        self._failed = None
                    except Exception as e:  # pruned under us, half-copied by hand, out of memory: keep serving
                        self._failed = (latest, time.monotonic())
                        self._listed_at = -math.inf  # look again on the next request
                        log.warning(
                            "run %s: cannot load step %d (%s: %s); still serving step %d",
                            self.run_id, latest, type(e).__name__, e, self._served.step,
                        )
            return self._served

    # --- internals ------------------------------------------------------------------------------
    def _probe(self) -> int | None:
        """The newest applied step when a listing is due, else None (nothing can have changed)."""
        try:
            mtime: int | None = os.stat(self.run_dir).st_mtime_ns
        except FileNotFoundError:
            mtime = None
        now = time.monotonic()
        due = (
            mtime != self._mtime
            or now - self._listed_at >= self.reload_interval_s
            or (mtime is not None and time.time_ns() - mtime < RECENT_MTIME_NS)
        )
        if not due:
            return None
        self._mtime, self._listed_at = mtime, now
        return self._latest_on_disk()

    def _latest_on_disk(self) -> int:
        """The newest step directory with a record.json (0: none); one stat in the usual case."""
        try:
            names = os.listdir(self.run_dir)
        except FileNotFoundError:
            return 0
        steps = sorted((int(n[5:]) for n in names if n.startswith("step-") and n[5:].isdigit()), reverse=True)
        for step in steps:
            if (self.run_dir / f"step-{step:08d}" / "record.json").exists():
                return step
        return 0

    def _spec(self, step: int) -> ModelSpec:
        manifest = self.store.read_manifest(self.run_id)
        if manifest is not None:
            spec = parse_model_spec(manifest["model"])
            if self.base is not None and to_dict(spec) != to_dict(self.base) and step == 0:
                log.warning("run %s records model %s; serving it rather than --base", self.run_id, to_dict(spec))
            return spec
        if step > 0:
            raise BadRequestError(f"run {self.run_id}: step {step} is applied but run.json is missing")
        if self.base is None:
            raise BadRequestError(
                f"run {self.run_id} has no run.json under {self.store.root} yet, so its model is unknown: "
                "pass --base tiny, --base /path/to/model or --base '{\"kind\": \"tiny\", ...}'"
            )
        return self.base

    def _tokenizer(self, spec: ModelSpec) -> Any:
        key = json.dumps(to_dict(spec), sort_keys=True)
        if key not in self._tokenizers:
            self._tokenizers[key] = load_tokenizer(spec)
        return self._tokenizers[key]

    def _load(self, step: int) -> Served:
        started = time.monotonic()
        spec = self._spec(step)
        adapter = None
        if step == 0:
            weights = None if isinstance(spec, TinyModelSpec) else spec.path
        else:
            weights = str(self.store.weights_dir(self.run_id, step))
            if spec.lora is not None and (found := self.store.adapter_dir(self.run_id, step)) is not None:
                adapter = str(found)  # a LoRA run: its adapters, merged in (or its merged weights, when saved)
                weights = None if weights == adapter else weights
        model = load_policy_model(spec, None if step == 0 else weights, adapter, self.device, trainable=False)
        model.eval()
        model.requires_grad_(False)
        policy = Policy(model, self._tokenizer(spec), self.device)
        if self.max_model_len is not None:
            limit = self.max_model_len
        elif isinstance(spec, TinyModelSpec):
            limit = parse_step_config(None).max_seq_len  # RoPE has no hard limit; the trainer cuts transcripts here
        else:
            limit = int(getattr(model.config, "max_position_embeddings", 0) or parse_step_config(None).max_seq_len)
        served = Served(step, policy, spec, weights or adapter, stop_ids(policy), limit, time.time())
        self.loads += 1
        metrics.WEIGHT_LOADS.inc()
        log.info(
            "run %s: serving %sstep %d (%s) on %s, loaded in %.2fs",
            self.run_id, "" if self.pinned_step is None else "pinned ", step, weights or "tiny model built in code",
            self.device, time.monotonic() - started,
        )
        return served
