"""The policy server command: an OpenAI-compatible chat endpoint serving training runs' latest weights.

``python -m mockworld_trainer.policy_server --run-id R [--port 8000] [--base tiny|PATH|JSON]``
``python -m mockworld_trainer.policy_server --any-run [--max-loaded-runs 2] [--base tiny|PATH|JSON]``

Endpoints: ``GET /v1/models``, ``POST /v1/chat/completions``, ``GET /health``. The parts are in serving/
(reload, pool, requests, generation, tool_calls, forced_calls, app, http); this module parses the command line,
builds the server and runs it. See README.md, "Policy endpoint for CPU and single-machine runs".
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

# Nothing may be fetched from a model hub at run time; set before transformers is imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
from transformers.utils import logging as transformers_logging  # noqa: E402

from .checkpoint import CheckpointStore  # noqa: E402
from .config import ModelSpec, parse_model_spec  # noqa: E402
from .errors import BadRequestError, TrainerError  # noqa: E402
from .serving.app import PolicyServer  # noqa: E402
from .serving.pool import list_runs  # noqa: E402


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
