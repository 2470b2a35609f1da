"""PolicyServer: what the policy server answers on each route, over one run or many.

Single-run mode (``run_id``): one PolicyHolder, requests name the served model (``policy``) or the run id.
Multi-run mode (``run_id=None``): the request's ``model`` names the run (pool.py); unknown runs and steps
are 404s naming the runs, or the run's steps, that exist. A run without a run.json (not stepped yet) is
served at step 0 from ``base``, or is a 404 without it. ``/v1/models`` lists the runs under the checkpoint
root, each with its newest step and the steps whose weights are on disk.

Every completion carries the policy version that produced it (``policy_version``, ``system_fingerprint``
``step-N`` and the ``x-policy-version`` header) and its run (``run_id``, ``x-run-id``).
"""

from __future__ import annotations

import http.server
import logging
import os
import secrets
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from ..checkpoint import CheckpointStore
from ..config import ModelSpec
from ..errors import BadRequestError
from ..trainer import default_device
from . import metrics
from .forced_calls import as_call, check_forced_call, open_call, sample_turn
from .generation import make_generator
from .http import Handler, version_headers
from .pool import LISTED_IN_ERRORS, ModelKey, PolicyPool, list_runs, model_name, parse_model_name, servable_steps
from .reload import PolicyHolder, Served
from .requests import ApiError, ChatRequest, parse_chat_request
from .tool_calls import parse_tool_calls, tool_call_entries

log = logging.getLogger("mockworld.policy_server")


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
        self.httpd = http.server.ThreadingHTTPServer((host, port), Handler)
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
        }, version_headers(served, self.holder.run_id)

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
                {"model": model_name(k), "run_id": h.run_id, "policy_version": h.served.step,
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
        }, version_headers(served, self.holder.run_id)

    def chat_completion(self, body: Any) -> tuple[dict[str, Any], dict[str, str]]:
        """Answers one chat completion body: (the OpenAI response, headers naming the step that produced it)."""
        model = body.get("model") if isinstance(body, dict) else None
        key = self._resolve(model)
        request = parse_chat_request(body)
        name = self.served_model_name if self.holder is not None else model
        with self._policy(key) as (served, run_id):  # pinned for this request: a swap now does not touch it
            out = self._complete(request, served, run_id, name)
        return out, version_headers(served, run_id)

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
        check_forced_call(request, served)
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
                generator = make_generator(seed)
                opened = open_call(request, served, prompt, generator, self._tokenize_lock)
                budget = max(1, max_new - (len(opened.prompt) - len(prompt)))
                ids, finish, text = sample_turn(request, served, opened, budget, generator, self._tokenize_lock)
                completion_tokens += len(opened.prompt) - len(prompt) + len(ids)  # the opening is the turn's
                choice = self._choice(index, text, finish, request, opened.prompt, ids, seed)
                choice = as_call(choice, opened, text, ids, seed, finish)
                choices.append(choice)
        metrics.TOKENS.labels("prompt").inc(len(prompt))
        metrics.TOKENS.labels("completion").inc(completion_tokens)
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
            message["content"] = content
            message["tool_calls"] = tool_call_entries(calls, seed, prompt, ids)
            finish = "tool_calls"
        return {"index": index, "message": message, "finish_reason": finish, "logprobs": None}


def _ranges(steps: Sequence[int]) -> str:
    """``[0, 1, 2, 3, 7]`` -> ``"0..3, 7"``."""
    spans: list[list[int]] = []
    for step in sorted(steps):
        if spans and step == spans[-1][1] + 1:
            spans[-1][1] = step
        else:
            spans.append([step, step])
    return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in spans) or "none"
