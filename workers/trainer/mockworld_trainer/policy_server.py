"""An OpenAI-compatible chat endpoint that serves the latest weights of training runs (weight sync).

``python -m mockworld_trainer.policy_server --run-id R [--port 8000] [--base tiny|PATH|JSON]``
``python -m mockworld_trainer.policy_server --any-run [--max-loaded-runs 2] [--base tiny|PATH|JSON]``

For CPU and single-machine runs: rollouts of GRPO iteration n+1 must be sampled from the policy that
step n produced. This server reads the trainer's checkpoints (checkpoint.py layout) and, before each
request, swaps in the newest applied step of the run when there is one. On clusters use vLLM and its
weight-reload path instead (README, "Weight reload on serving engines").

Endpoints: ``GET /v1/models``, ``POST /v1/chat/completions``, ``GET /health``.

Served model id: ``--served-model-name`` (default ``policy``); requests may also name the run id. Every
response carries the policy version, the applied step whose weights produced it: the header
``x-policy-version: N``, the body field ``policy_version: N`` and ``system_fingerprint: "step-N"``; and the
run: the header ``x-run-id`` and the body field ``run_id``.

Multi-run mode (``--any-run``, e.g. to evaluate many training runs from one server): the request's ``model``
names the run. ``"<run_id>"`` serves its newest applied step (reloaded as above); ``"<run_id>@<step>"``
serves exactly that applied step while its weights are on disk (``@0``: the base model), never reloaded.
Unknown runs and steps are 404s naming the runs, or the run's steps, that exist. A run without a run.json
(not stepped yet) is served at step 0 from ``--base``, or is a 404 without it. Holders are made on first
use (PolicyPool); at most ``--max-loaded-runs`` are loaded, the least recently used idle one is unloaded to
make room, and one that is generating is never unloaded (a request waits instead). ``/v1/models`` lists
the runs under the checkpoint root, each with its newest step and the steps whose weights are on disk.

Prompts are built by the trainer's own tokenizers (model.py ``generation_prompt``): the byte layout of
the tiny model, or the model's chat template tokenized segment by segment exactly as the trainer will
tokenize the transcript. So the tokens a rollout was sampled from are the tokens the trainer scores.

Tool calls: when the request has ``tools`` (and ``tool_choice`` is not ``"none"``), an output that is
some text followed only by one or more blocks ``<tool_call>{"name": N, "arguments": A}</tool_call>``
(whitespace between blocks allowed), where every N is one of the request's tool names and A is a JSON
object or a string holding one (or absent: ``{}``), becomes ``message.tool_calls`` with
``finish_reason: "tool_calls"``; the text before the first block (less one trailing newline) is the
content, or null when blank. This is Qwen3's format and the byte layout's (model.py ``message_text``).
Anything else, junk included, is returned as ``content`` with ``finish_reason`` ``stop`` or ``length``.

Reload: each request stats the run directory (a step appears by an atomic rename into it, which changes
its mtime) and lists it when the mtime changed, is less than a second old, or ``--reload-interval``
(0.5 s) passed since the last listing. A newer step is loaded under a lock that new requests wait on, so
they are answered by the new policy; requests already generating keep their reference to the old model
and finish on it. A load that fails (weights pruned under it) keeps the old policy and is retried.

Sampling: ``temperature`` (0 = greedy), ``top_p``, ``max_tokens`` / ``max_completion_tokens``, ``seed``
and ``n``, from the model's full distribution (no penalties, no stop strings: the policy's own
distribution is what GRPO assumes). Draws use a per-request CPU ``torch.Generator``: the same seed,
weights and input give the same output, whatever else the server is doing; choice i uses seed + i.
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import json
import logging
import math
import os
import secrets
import signal
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

# Nothing may be fetched from a model hub at run time; set before transformers is imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
from transformers import DynamicCache  # noqa: E402
from transformers.utils import logging as transformers_logging  # noqa: E402

from .checkpoint import CheckpointStore  # noqa: E402
from .config import ModelSpec, TinyModelSpec, parse_model_spec, parse_step_config, to_dict  # noqa: E402
from .errors import BadRequestError, CheckpointMissingError, TrainerError  # noqa: E402
from .model import ROLES, ByteTokenizer, ChatTemplateTokenizer, Policy, load_model, load_tokenizer  # noqa: E402
from .optim import autocast  # noqa: E402
from .trainer import default_device  # noqa: E402

log = logging.getLogger("mockworld.policy_server")

TOOL_OPEN, TOOL_CLOSE = "<tool_call>", "</tool_call>"
MAX_BODY_BYTES = 64 * 1024 * 1024
MAX_N = 16
GREEDY_BELOW = 1e-5  # temperatures this small sample greedily (as vLLM does), not through an overflowing softmax
RECENT_MTIME_NS = 1_000_000_000  # a directory changed this recently may change again within one timestamp tick


class ApiError(Exception):
    """Answered as OpenAI's error body ``{"error": {"message", "type", "param", "code"}}`` with ``status``."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code

    def body(self) -> dict[str, Any]:
        kind = "server_error" if self.status >= 500 else "invalid_request_error"
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}


# --- the served policy and its reloading ----------------------------------------------------------------


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


def _stop_ids(policy: Policy) -> frozenset[int]:
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
        if step == 0:
            weights = None if isinstance(spec, TinyModelSpec) else spec.path
        else:
            weights = str(self.store.weights_dir(self.run_id, step))
        model = load_model(spec, None if step == 0 else weights, self.device)
        model.eval()
        model.requires_grad_(False)
        policy = Policy(model, self._tokenizer(spec), self.device)
        if self.max_model_len is not None:
            limit = self.max_model_len
        elif isinstance(spec, TinyModelSpec):
            limit = parse_step_config(None).max_seq_len  # RoPE has no hard limit; the trainer cuts transcripts here
        else:
            limit = int(getattr(model.config, "max_position_embeddings", 0) or parse_step_config(None).max_seq_len)
        served = Served(step, policy, spec, weights, _stop_ids(policy), limit, time.time())
        self.loads += 1
        log.info(
            "run %s: serving %sstep %d (%s) on %s, loaded in %.2fs",
            self.run_id, "" if self.pinned_step is None else "pinned ", step, weights or "tiny model built in code",
            self.device, time.monotonic() - started,
        )
        return served


# --- many runs: model names, the runs on disk, a bounded pool of holders -----------------------------------

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
                         _model_name(idle), _model_name(key), self.max_loaded)


def _model_name(key: ModelKey) -> str:
    return key[0] if key[1] is None else f"{key[0]}@{key[1]}"


# --- requests ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChatRequest:
    """A validated chat completion request."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    tool_names: frozenset[str]
    parse_tool_calls: bool
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int | None = None
    seed: int | None = None
    n: int = 1


def _number(body: dict[str, Any], key: str, errors: list[tuple[str, str]], default: float) -> float:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        errors.append((key, f"expected a finite number, got {value!r}"))
        return default
    return float(value)


def _integer(body: dict[str, Any], key: str, errors: list[tuple[str, str]]) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if type(value) is not int:
        errors.append((key, f"expected an integer, got {value!r}"))
        return None
    return value


def _check_messages(messages: Any, errors: list[tuple[str, str]]) -> None:
    if not isinstance(messages, list) or not messages:
        errors.append(("messages", "expected a non-empty list of chat messages"))
        return
    for j, m in enumerate(messages):
        where = f"messages[{j}]"
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            errors.append((f"{where}.role", f"expected one of {', '.join(ROLES)}"))
            continue
        if not isinstance(m.get("content"), str | list | type(None)):
            errors.append((f"{where}.content", "expected a string, a list of content parts or null"))
        calls = m.get("tool_calls")
        if calls is not None:
            if m["role"] != "assistant" or not isinstance(calls, list):
                errors.append((f"{where}.tool_calls", "expected a list, on an assistant message"))
                continue
            for k, c in enumerate(calls):
                fn = c.get("function") if isinstance(c, dict) else None
                if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                    errors.append((f"{where}.tool_calls[{k}].function.name", "expected a string"))


def _check_tools(tools: Any, errors: list[tuple[str, str]]) -> list[str]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        errors.append(("tools", "expected a list of function tools"))
        return []
    names = []
    for j, t in enumerate(tools):
        fn = t.get("function") if isinstance(t, dict) else None
        if not isinstance(t, dict) or t.get("type") != "function" or not isinstance(fn, dict):
            errors.append((f"tools[{j}]", 'expected {"type": "function", "function": {"name": ...}}'))
        elif not isinstance(fn.get("name"), str) or not fn["name"]:
            errors.append((f"tools[{j}].function.name", "expected a non-empty string"))
        else:
            names.append(fn["name"])
    return names


def parse_chat_request(body: Any) -> ChatRequest:
    """Validates a chat completion body; every bad path is named in one 400."""
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    errors: list[tuple[str, str]] = []
    _check_messages(body.get("messages"), errors)
    names = _check_tools(body.get("tools"), errors)
    tool_choice = body.get("tool_choice")
    if tool_choice not in (None, "auto", "none"):
        errors.append(("tool_choice", "only 'auto' and 'none' are supported (no constrained decoding)"))
    temperature = _number(body, "temperature", errors, 1.0)
    if temperature < 0:
        errors.append(("temperature", "must be >= 0 (0 is greedy)"))
    top_p = _number(body, "top_p", errors, 1.0)
    if not 0 < top_p <= 1:
        errors.append(("top_p", "must be in (0, 1]"))
    max_tokens = _integer(body, "max_completion_tokens", errors)
    if max_tokens is None:
        max_tokens = _integer(body, "max_tokens", errors)
    if max_tokens is not None and max_tokens < 1:
        errors.append(("max_tokens", "must be >= 1"))
    seed = _integer(body, "seed", errors)
    if seed is not None and not -(2**63) <= seed < 2**64:
        errors.append(("seed", "must fit in 64 bits"))
    n = _integer(body, "n", errors)
    n = 1 if n is None else n
    if not 1 <= n <= MAX_N:
        errors.append(("n", f"must be in 1..{MAX_N}"))
    # Options that would change what is sampled away from the policy's distribution, or the wire format.
    if body.get("stream"):
        errors.append(("stream", "streaming is not supported"))
    if body.get("stop"):
        errors.append(("stop", "stop sequences are not supported; the policy stops at its end-of-turn token"))
    if body.get("logprobs"):
        errors.append(("logprobs", "not supported (the trainer recomputes log-probs)"))
    for key in ("frequency_penalty", "presence_penalty"):
        if _number(body, key, errors, 0.0) != 0:
            errors.append((key, "not supported: it would sample from something other than the policy"))
    if body.get("logit_bias"):
        errors.append(("logit_bias", "not supported: it would sample from something other than the policy"))
    fmt = body.get("response_format")
    if fmt is not None and not (isinstance(fmt, dict) and fmt.get("type") == "text"):
        errors.append(("response_format", "only {'type': 'text'} is supported"))
    if errors:
        raise ApiError(400, "invalid request: " + "; ".join(f"{p}: {m}" for p, m in errors), param=errors[0][0])
    tools = body.get("tools") or None
    return ChatRequest(
        messages=body["messages"],
        tools=tools,
        tool_names=frozenset(names),
        parse_tool_calls=bool(names) and tool_choice != "none",
        temperature=temperature,
        top_p=top_p,
        max_tokens=max_tokens,
        seed=seed,
        n=n,
    )


# --- generation ----------------------------------------------------------------------------------------


def sample_next(logits: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator) -> int:
    """One token from ``logits`` (V,): greedy at temperature 0, else softmax(logits / T) cut to top_p, on CPU."""
    logits = logits.float().cpu()
    if temperature < GREEDY_BELOW:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits / temperature, dim=-1)  # (V,)
    if top_p < 1.0:
        sorted_p, order = torch.sort(probs, descending=True, stable=True)  # (V,), (V,)
        keep = (torch.cumsum(sorted_p, 0) - sorted_p) < top_p  # the smallest prefix reaching top_p
        pick = torch.multinomial(sorted_p * keep, 1, generator=generator)
        return int(order[pick])
    return int(torch.multinomial(probs, 1, generator=generator))


@torch.inference_mode()
def generate(
    served: Served,
    prompt_ids: Sequence[int],
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    generator: torch.Generator,
) -> tuple[list[int], str]:
    """Samples one assistant turn with a KV cache; returns (generated ids incl. the stop token, finish reason)."""
    model, device = served.policy.model, served.policy.device
    cache = DynamicCache(config=model.config)
    ids = torch.tensor([list(prompt_ids)], dtype=torch.long, device=device)  # (1, T)
    out: list[int] = []
    while True:
        with autocast(device):  # as the trainer scores: bf16 autocast on CUDA
            logits = model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1).logits[0, -1]  # (V,)
        token = sample_next(logits, temperature, top_p, generator)
        out.append(token)
        if token in served.stop_ids:
            return out, "stop"
        if len(out) >= max_new_tokens:
            return out, "length"
        ids = torch.tensor([[token]], dtype=torch.long, device=device)  # (1, 1)


def decode(served: Served, ids: Sequence[int]) -> str:
    """The text of generated ids, without the stop token; invalid bytes become U+FFFD."""
    body = [i for i in ids if i not in served.stop_ids]
    tok = served.policy.tokenizer
    if isinstance(tok, ByteTokenizer):
        return tok.decode(body)
    return tok.hf.decode(body, skip_special_tokens=True)


def parse_tool_calls(text: str, tool_names: frozenset[str]) -> tuple[str | None, list[dict[str, str]]] | None:
    """(content, [{"name", "arguments"}]) when ``text`` ends in valid tool-call blocks only, else None."""
    start = text.find(TOOL_OPEN)
    if start < 0:
        return None
    bodies, pos = [], start
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            break
        if not text.startswith(TOOL_OPEN, pos):
            return None  # text after a tool call: not a clean call
        end = text.find(TOOL_CLOSE, pos + len(TOOL_OPEN))
        if end < 0:
            return None  # unterminated
        bodies.append(text[pos + len(TOOL_OPEN) : end])
        pos = end + len(TOOL_CLOSE)
    calls = []
    for body in bodies:
        try:
            obj = json.loads(body)
        except (ValueError, RecursionError):
            return None
        if not isinstance(obj, dict) or set(obj) - {"name", "arguments"}:
            return None
        if not isinstance(obj.get("name"), str) or obj["name"] not in tool_names:
            return None
        args = obj.get("arguments", {})
        if isinstance(args, str):
            try:
                if not isinstance(json.loads(args), dict):
                    return None
            except (ValueError, RecursionError):
                return None
        elif isinstance(args, dict):
            args = json.dumps(args, ensure_ascii=False)
        else:
            return None
        calls.append({"name": obj["name"], "arguments": args})
    content = text[:start]
    if content.endswith("\n"):
        content = content[:-1]  # the separator the templates write before a call
    return (content if content.strip() else None), calls


def _generator(seed: int | None) -> torch.Generator:
    g = torch.Generator(device="cpu")
    g.manual_seed(seed if seed is not None else secrets.randbits(63))
    return g


# --- the server ------------------------------------------------------------------------------------------


class PolicyServer:
    """The HTTP server and what it serves; ``start()`` runs it on a thread, ``serve_forever()`` on this one.

    With a ``run_id`` it serves that run (single-run mode, model name ``served_model_name`` or the run id).
    With ``run_id=None`` (multi-run mode) each request's ``model`` names the run: ``"<run_id>"`` for its newest
    applied step, ``"<run_id>@<step>"`` for exactly that step; at most ``max_loaded_runs`` holders are loaded.
    """

    def __init__(
        self,
        run_id: str | None,
        *,
        base: ModelSpec | None = None,
        store: CheckpointStore | None = None,
        device: torch.device | None = None,
        host: str = "127.0.0.1",
        port: int = 8000,
        served_model_name: str = "policy",
        reload_interval_s: float = 0.5,
        default_max_tokens: int = 1024,
        max_model_len: int | None = None,
        max_concurrency: int = 4,
        max_loaded_runs: int = 2,
    ) -> None:
        self.run_id = run_id
        self.served_model_name = served_model_name
        self.default_max_tokens = default_max_tokens
        self.store = store or CheckpointStore()
        self.base = base
        device = device or default_device()

        def make(run: str, step: int | None = None) -> PolicyHolder:
            return PolicyHolder(
                self.store, run, base, device, reload_interval_s=reload_interval_s, max_model_len=max_model_len, step=step
            )

        # Single-run mode: one holder, loaded now. Multi-run mode: holders made on first use, at most N at once.
        self.holder: PolicyHolder | None = make(run_id) if run_id is not None else None
        self.pool: PolicyPool | None = PolicyPool(make, max_loaded_runs) if run_id is None else None
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._tokenize_lock = threading.Lock()  # HF fast tokenizers are not safe to call from many threads
        self.httpd = http.server.ThreadingHTTPServer((host, port), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.policy_server = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def url(self) -> str:
        host = self.httpd.server_address[0]
        return f"http://{host}:{self.port}/v1"

    def start(self) -> PolicyServer:
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="policy-server", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    # --- operations: each returns (JSON body, response headers) -------------------------------------
    def models(self) -> tuple[dict[str, Any], dict[str, str]]:
        if self.holder is None:
            return {"object": "list", "data": [self._run_entry(r) for r in list_runs(self.store)]}, {}
        served = self.holder.current()
        return {
            "object": "list",
            "data": [
                {
                    "id": self.served_model_name,
                    "object": "model",
                    "created": int(served.loaded_at),
                    "owned_by": "mockworld",
                    "root": served.model_path or "tiny",
                    "run_id": self.holder.run_id,
                    "policy_version": served.step,
                    "max_model_len": served.max_model_len,
                }
            ],
        }, _version_headers(served, self.holder.run_id)

    def model(self, name: str) -> tuple[dict[str, Any], dict[str, str]]:
        """``GET /v1/models/<name>``: the served model (single-run mode) or one run on disk (multi-run mode)."""
        if self.holder is not None:
            if name not in (self.served_model_name, self.holder.run_id):
                raise self._not_found(name)
            listing, headers = self.models()
            return listing["data"][0], headers
        run_id, step = parse_model_name(name)
        if step is not None or run_id not in list_runs(self.store):
            raise self._not_found(name)
        return self._run_entry(run_id), {}

    def health(self) -> tuple[dict[str, Any], dict[str, str]]:
        if self.pool is not None:
            loaded = [
                {"model": _model_name(k), "run_id": h.run_id, "policy_version": h.served.step,
                 "model_path": h.served.model_path}
                for k, h in self.pool.loaded()
            ]
            return {
                "status": "ok",
                "mode": "multi-run",
                "checkpoint_root": str(self.store.root),
                "max_loaded_runs": self.pool.max_loaded,
                "loaded": loaded,
            }, {}
        assert self.holder is not None
        served = self.holder.current()
        return {
            "status": "ok",
            "run_id": self.holder.run_id,
            "policy_version": served.step,
            "model_path": served.model_path,
        }, _version_headers(served, self.holder.run_id)

    def chat_completion(self, body: Any) -> tuple[dict[str, Any], dict[str, str]]:
        """Answers one chat completion body: (the OpenAI response, headers naming the step that produced it)."""
        model = body.get("model") if isinstance(body, dict) else None
        key = self._resolve(model)
        request = parse_chat_request(body)
        name = self.served_model_name if self.holder is not None else model
        with self._policy(key) as (served, run_id):  # pinned for this request: a swap now does not touch it
            out = self._complete(request, served, run_id, name)
        return out, _version_headers(served, run_id)

    # --- internals ----------------------------------------------------------------------------------
    def _resolve(self, model: Any) -> ModelKey | None:
        """Checks the request's ``model``: None in single-run mode, else (run id, pinned step or None); 404s."""
        if self.holder is not None:
            if model is not None and model not in (self.served_model_name, self.holder.run_id):
                raise self._not_found(model)
            return None
        if not isinstance(model, str) or not model:
            raise ApiError(
                400,
                "model: required; this server serves many runs: name one as '<run_id>' (its newest applied step) "
                f"or '<run_id>@<step>' (exactly that step); runs: {self._run_names()}",
                param="model",
            )
        run_id, step = parse_model_name(model)
        try:
            self.store.run_dir(run_id)
        except BadRequestError:
            raise self._not_found(model) from None
        has_manifest = self.store.read_manifest(run_id) is not None
        applied = self.store.applied_steps(run_id)
        if not has_manifest and not applied and self.base is None:
            raise self._not_found(model)
        if step is not None and step > 0:
            if step not in applied:
                have = f"its applied steps are {_ranges(applied)}" if applied else "it has no applied step yet"
                raise ApiError(
                    404,
                    f"The model {model!r} does not exist: run {run_id!r} has not applied step {step}; {have}",
                    param="model",
                    code="model_not_found",
                )
            if not (self.store.step_dir(run_id, step) / "model" / "config.json").exists():
                raise ApiError(
                    404,
                    f"The model {model!r} does not exist: the weights of step {step} of run {run_id!r} are no "
                    f"longer on disk (retention keeps the newest {self.store.keep_last} steps and pinned ones; pin "
                    f"with trainer.saveCheckpoint); steps with weights: "
                    f"{_ranges(servable_steps(self.store, run_id, applied))}",
                    param="model",
                    code="model_not_found",
                )
        return run_id, step

    @contextmanager
    def _policy(self, key: ModelKey | None) -> Iterator[tuple[Served, str]]:
        """(the policy to answer with, its run id), held loaded until the block ends."""
        if self.holder is not None:
            yield self.holder.current(), self.holder.run_id
            return
        assert self.pool is not None and key is not None
        with self.pool.use(key) as holder:
            yield holder.current(), holder.run_id

    def _complete(self, request: ChatRequest, served: Served, run_id: str, name: str) -> dict[str, Any]:
        started = time.monotonic()
        try:
            with self._tokenize_lock:
                prompt = served.policy.tokenizer.generation_prompt(request.messages, request.tools)
        except BadRequestError as e:
            raise ApiError(400, str(e), param="messages") from e
        except Exception as e:  # the chat template rejected the conversation (jinja errors and the like)
            raise ApiError(400, f"cannot render the conversation: {type(e).__name__}: {e}", param="messages") from e
        room = served.max_model_len - len(prompt)
        if room < 1:
            raise ApiError(
                400,
                f"the prompt has {len(prompt)} tokens; this model's context holds {served.max_model_len}",
                param="messages",
                code="context_length_exceeded",
            )
        max_new = min(room, request.max_tokens or self.default_max_tokens)
        choices, completion_tokens = [], 0
        with self._slots:
            for index in range(request.n):
                seed = None if request.seed is None else request.seed + index
                ids, finish = generate(
                    served, prompt, max_new, request.temperature, request.top_p, _generator(seed)
                )
                completion_tokens += len(ids)
                with self._tokenize_lock:
                    text = decode(served, ids)
                choices.append(self._choice(index, text, finish, request, prompt, ids, seed))
        log.info(
            "chat run=%s step=%d prompt=%d completion=%d finish=%s %.2fs",
            run_id, served.step, len(prompt), completion_tokens,
            ",".join(c["finish_reason"] for c in choices), time.monotonic() - started,
        )
        return {
            "id": f"chatcmpl-{secrets.token_hex(12)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": name,
            "system_fingerprint": f"step-{served.step}",
            "policy_version": served.step,
            "run_id": run_id,
            "choices": choices,
            "usage": {
                "prompt_tokens": len(prompt),
                "completion_tokens": completion_tokens,
                "total_tokens": len(prompt) + completion_tokens,
            },
        }

    def _run_entry(self, run_id: str) -> dict[str, Any]:
        """A run on disk as a ``/v1/models`` entry (multi-run mode), without loading it."""
        applied = self.store.applied_steps(run_id)
        latest = applied[-1] if applied else 0
        manifest = self.store.read_manifest(run_id)
        if latest > 0:
            root: str = str(self.store.step_dir(run_id, latest) / "model")
        else:
            spec = manifest["model"] if manifest else {}
            root = spec.get("path") or spec.get("kind") or "unknown"
        loaded = [h.served for (r, _), h in self._pool_loaded() if r == run_id]  # any step: the same model
        try:
            created = int(os.stat(self.store.run_dir(run_id)).st_mtime)
        except FileNotFoundError:
            created = 0
        return {
            "id": run_id,
            "object": "model",
            "created": created,
            "owned_by": "mockworld",
            "root": root,
            "run_id": run_id,
            "policy_version": latest,
            "servable_steps": servable_steps(self.store, run_id, applied),
            "max_model_len": loaded[0].max_model_len if loaded else None,
        }

    def _pool_loaded(self) -> list[tuple[ModelKey, PolicyHolder]]:
        return self.pool.loaded() if self.pool is not None else []

    def _run_names(self) -> str:
        runs = list_runs(self.store)
        if not runs:
            return f"none yet under {self.store.root}"
        shown = ", ".join(repr(r) for r in runs[:LISTED_IN_ERRORS])
        more = len(runs) - LISTED_IN_ERRORS
        return shown + (f" and {more} more (GET /v1/models lists them)" if more > 0 else "")

    def _not_found(self, name: str) -> ApiError:
        if self.holder is not None:
            what = f"this server serves {self.served_model_name!r} (run {self.holder.run_id!r})"
        else:
            what = f"no run {parse_model_name(name)[0]!r} under {self.store.root}; runs: {self._run_names()}"
        return ApiError(404, f"The model {name!r} does not exist; {what}", param="model", code="model_not_found")

    @staticmethod
    def _choice(
        index: int, text: str, finish: str, request: ChatRequest, prompt: list[int], ids: list[int], seed: int | None
    ) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
        parsed = parse_tool_calls(text, request.tool_names) if request.parse_tool_calls and finish == "stop" else None
        if parsed is not None:
            content, calls = parsed
            # Seeded: ids follow from the output (and prompt), so the same seed gives the same response.
            nonce = str(seed) if seed is not None else secrets.token_hex(8)
            digest = hashlib.sha256(json.dumps([nonce, prompt, ids]).encode()).hexdigest()
            message["content"] = content
            message["tool_calls"] = [
                {
                    "id": f"call_{hashlib.sha256(f'{digest}:{k}'.encode()).hexdigest()[:24]}",
                    "type": "function",
                    "function": call,
                }
                for k, call in enumerate(calls)
            ]
            finish = "tool_calls"
        return {"index": index, "message": message, "finish_reason": finish, "logprobs": None}


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mockworld-policy/1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        log.debug("%s %s", self.address_string(), format % args)

    @property
    def app(self) -> PolicyServer:
        return self.server.policy_server  # type: ignore[attr-defined]

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v1/models":
            self._answer(self.app.models)
        elif path.startswith("/v1/models/"):
            self._answer(lambda: self.app.model(unquote(path[len("/v1/models/") :])))
        elif path in ("/health", "/v1/health"):
            self._answer(self.app.health)
        elif path == "/v1/chat/completions":
            self._send_error(ApiError(405, "use POST for /v1/chat/completions"))
        else:
            self._send_error(ApiError(404, f"no route for GET {path}"))

    def do_POST(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0].rstrip("/")
        try:
            body = self._read_json()
        except ApiError as e:
            self._send_error(e)
            return
        if path == "/v1/chat/completions":
            self._answer(lambda: self.app.chat_completion(body))
        else:
            self._send_error(ApiError(404, f"no route for POST {path}"))

    def _read_json(self) -> Any:
        length = self.headers.get("Content-Length")
        if length is None or not length.strip().isdigit():
            self.close_connection = True
            raise ApiError(411, "a Content-Length header (a byte count) is required")
        n = int(length)
        if n > MAX_BODY_BYTES:
            self.close_connection = True
            raise ApiError(413, f"the body is larger than {MAX_BODY_BYTES} bytes")
        raw = self.rfile.read(n)
        try:
            return json.loads(raw)
        except ValueError as e:
            raise ApiError(400, f"the request body is not valid JSON: {e}") from e

    def _answer(self, fn: Any) -> None:
        try:
            body, headers = fn()
        except ApiError as e:
            self._send_error(e)
            return
        except TrainerError as e:
            status = 400 if isinstance(e, BadRequestError) else 404 if isinstance(e, CheckpointMissingError) else 500
            self._send_error(ApiError(status, str(e)))
            return
        except Exception as e:
            log.exception("request failed")
            self._send_error(ApiError(500, f"{type(e).__name__}: {e}"))
            return
        self._send(200, body, headers)

    def _send_error(self, error: ApiError) -> None:
        holder = self.app.holder  # single-run mode: errors carry the version served; multi-run: no one version
        self._send(error.status, error.body(), {} if holder is None else _version_headers(holder.served, None))

    def _send(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


def _version_headers(served: Served, run_id: str | None) -> dict[str, str]:
    """``x-policy-version: N`` (the step whose weights answered) and, with a run, ``x-run-id``."""
    headers = {"x-policy-version": str(served.step)}
    if run_id is not None:
        headers["x-run-id"] = quote(run_id, safe="-_.")  # header values are latin-1: percent-encoded as on disk
    return headers


def _ranges(steps: Sequence[int]) -> str:
    """``[0, 1, 2, 3, 7]`` -> ``"0..3, 7"``."""
    spans: list[list[int]] = []
    for step in sorted(steps):
        if spans and step == spans[-1][1] + 1:
            spans[-1][1] = step
        else:
            spans.append([step, step])
    return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in spans) or "none"


# --- command line ----------------------------------------------------------------------------------------


def parse_base(text: str | None) -> ModelSpec | None:
    """``tiny`` (the default tiny spec), a JSON model spec, or a local pretrained directory."""
    if text is None:
        return None
    if text == "tiny":
        return parse_model_spec({"kind": "tiny"}, where="--base")
    if text.lstrip().startswith("{"):
        try:
            return parse_model_spec(json.loads(text), where="--base")
        except ValueError as e:
            raise BadRequestError(f"--base: not valid JSON: {e}") from e
    path = Path(text).expanduser().resolve()
    if not (path / "config.json").exists():
        raise BadRequestError(f"--base: {path} is not a model directory (no config.json); or pass 'tiny'")
    return parse_model_spec({"kind": "pretrained", "path": str(path)}, where="--base")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mockworld_trainer.policy_server",
        description="OpenAI-compatible chat endpoint serving the latest applied step of a training run "
        "(--run-id), or of any run under the checkpoint directory, named by each request's model (--any-run).",
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--run-id", help="the training run (the workflow id); requests use model 'policy' or the run id")
    mode.add_argument(
        "--any-run",
        action="store_true",
        help="serve every run under the checkpoint directory: a request's model '<run_id>' gets the run's newest "
        "applied step, '<run_id>@<step>' exactly that step (404 when its weights are gone)",
    )
    parser.add_argument(
        "--base",
        help="step-0 model while the run has no run.json: 'tiny', a local model directory, or a JSON model "
        "spec; once the trainer records the run's model, that one is served. With --any-run: the step-0 model "
        "of any run without a run.json (without --base, such a run is a 404)",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--checkpoint-dir", help="default: MOCKWORLD_CHECKPOINT_DIR, else $MOCKWORLD_HOME/checkpoints")
    parser.add_argument("--device", help="default: MOCKWORLD_TRAINER_DEVICE, else cuda if available, else cpu")
    parser.add_argument("--served-model-name", help="with --run-id: the model name served (default: policy)")
    parser.add_argument(
        "--max-loaded-runs",
        type=int,
        help="with --any-run: policies kept loaded at once (default 2); the least recently used idle one is "
        "unloaded to make room, and a request waits while all are generating",
    )
    parser.add_argument("--reload-interval", type=float, default=0.5, help="seconds between forced listings")
    parser.add_argument("--default-max-tokens", type=int, default=1024, help="when a request sets no max_tokens")
    parser.add_argument("--max-model-len", type=int, help="prompt + completion tokens (default: from the model)")
    parser.add_argument("--max-concurrency", type=int, default=4, help="generations at once; others wait")
    return parser


def server_from_args(argv: Sequence[str] | None = None) -> PolicyServer:
    """Parses the command line and builds the server (bound, model loaded in single-run mode, not yet serving)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.any_run and args.served_model_name is not None:
        parser.error("--served-model-name applies to --run-id; with --any-run a request's model names the run")
    if args.run_id is not None and args.max_loaded_runs is not None:
        parser.error("--max-loaded-runs applies to --any-run; --run-id serves one run")
    try:
        return PolicyServer(
            None if args.any_run else args.run_id,
            base=parse_base(args.base),
            store=CheckpointStore(args.checkpoint_dir) if args.checkpoint_dir else None,
            device=torch.device(args.device) if args.device else None,
            host=args.host,
            port=args.port,
            served_model_name=args.served_model_name or "policy",
            reload_interval_s=args.reload_interval,
            default_max_tokens=args.default_max_tokens,
            max_model_len=args.max_model_len,
            max_concurrency=args.max_concurrency,
            max_loaded_runs=2 if args.max_loaded_runs is None else args.max_loaded_runs,
        )
    except (TrainerError, OSError) as e:
        raise SystemExit(f"mockworld policy server: {e}") from None


def main(argv: Sequence[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    transformers_logging.disable_progress_bar()  # one "Loading weights" bar per reload is noise in a server log
    server = server_from_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.httpd.shutdown).start())
    if server.holder is not None:
        message = (
            f"policy server for run {server.holder.run_id} at {server.url} (model {server.served_model_name!r}, "
            f"step {server.holder.served.step})"
        )
    else:
        assert server.pool is not None
        message = (
            f"policy server for runs under {server.store.root} at {server.url} (model '<run_id>' or "
            f"'<run_id>@<step>', at most {server.pool.max_loaded} loaded, {len(list_runs(server.store))} runs now)"
        )
    print(message, file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()


if __name__ == "__main__":
    main()
