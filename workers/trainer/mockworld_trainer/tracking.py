"""Experiment tracking: a run's metrics and config in TensorBoard (by default), W&B and MLflow.

Two sources write at global step = the trainer step (GRPO: iteration + 1, the policy version):

* every step the trainer returns (activities.py): its own metrics as ``trainer.<name>`` and, once per
  run, its config (the model spec and step hyper-parameters);
* ``trainer.trackIteration``, called by GrpoTraining after it recorded an iteration: the iteration's
  metrics exactly as the viewer stores them (``training_metrics.metrics``), flattened as the viewer
  plots them (every finite numeric leaf by dotted path: ``rewardMean``, ``evaluation.rewardMean``,
  ``endReasons.max_turns``), less ``trainer.*`` (the step wrote those, the same values), and once per
  run the workflow's hyper-parameters.

Each (run, source, step) is written once: a marker file under the run's directory is created after
the backends took it, so a replayed step or a retried call writes nothing new (a worker killed
between the write and the marker writes that step again, as a duplicate point).

Backends, chosen by the environment:

* TensorBoard, unless ``MOCKWORLD_TENSORBOARD=0``: event files under
  ``$MOCKWORLD_TENSORBOARD_DIR/<run>/`` (default ``$MOCKWORLD_HOME/tensorboard``, ``~/.mockworld``);
* W&B when ``WANDB_PROJECT`` is set (``wandb`` reads its own ``WANDB_*`` variables: entity, mode,
  API key); the W&B run id is derived from the mockworld run, so a restarted worker resumes it;
* MLflow when ``MLFLOW_TRACKING_URI`` is set, in experiment ``MLFLOW_EXPERIMENT_NAME`` (default
  ``mockworld``); the MLflow run is found again by its ``mockworld.run_id`` tag.

Tracking never fails or delays a step's result beyond its own calls: a backend that raises is
logged as a warning and switched off for the rest of the process. Config values whose key names a
secret (key, token, secret, password) are never sent.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from .checkpoint import mockworld_home

log = logging.getLogger("mockworld.tracking")

Scalar = str | int | float | bool
_SECRET = re.compile(r"key|token|secret|password|credential|authorization", re.IGNORECASE)


def tracking_dir() -> Path:
    """Root of the per-run TensorBoard directories (and of the markers of what was written)."""
    explicit = os.environ.get("MOCKWORLD_TENSORBOARD_DIR")
    if explicit:
        return Path(explicit)
    return mockworld_home() / "tensorboard"


def run_dir(root: Path, run_id: str) -> Path:
    """The run's directory: its id as one path segment, never a way out of ``root``."""
    if not run_id or run_id in (".", ".."):
        raise ValueError(f"run_id: expected a non-empty id, got {run_id!r}")
    return root / quote(run_id, safe="-_.")


def numeric_leaves(value: Any, prefix: str = "") -> dict[str, float]:
    """Every finite number under ``value`` by dotted path (the viewer's metricSeries rule); booleans,
    strings, nulls and lists are not metrics."""
    out: dict[str, float] = {}
    if isinstance(value, bool):
        return out
    if isinstance(value, int | float):
        if math.isfinite(value) and prefix:
            out[prefix] = float(value)
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            out.update(numeric_leaves(inner, f"{prefix}.{key}" if prefix else str(key)))
    return out


def flat_config(value: Any, prefix: str = "") -> dict[str, Scalar]:
    """A config as dotted scalar parameters; lists as JSON; secrets' names dropped with their values."""
    out: dict[str, Scalar] = {}
    if prefix and _SECRET.search(prefix.rsplit(".", 1)[-1]):
        return out
    if isinstance(value, Mapping):
        for key, inner in value.items():
            out.update(flat_config(inner, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(value, list):
        out[prefix] = json.dumps(value, sort_keys=True)
    elif value is not None and prefix:
        out[prefix] = value
    return out


class Backend(Protocol):
    name: str

    def config(self, run_id: str, params: dict[str, Scalar]) -> None: ...
    def scalars(self, run_id: str, step: int, values: dict[str, float]) -> None: ...
    def close(self) -> None: ...


class TensorBoardBackend:
    """One SummaryWriter per run, flushed after every write so the files are readable at once."""

    name = "tensorboard"

    def __init__(self, root: Path) -> None:
        from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package

        self._writer_class = SummaryWriter
        self.root = root
        self._writers: dict[str, Any] = {}

    def _writer(self, run_id: str) -> Any:
        if run_id not in self._writers:
            for old in self._writers.values():  # one run at a time per worker: keep one file open
                old.close()
            self._writers = {run_id: self._writer_class(log_dir=str(run_dir(self.root, run_id)))}
        return self._writers[run_id]

    def config(self, run_id: str, params: dict[str, Scalar]) -> None:
        text = "\n".join(f"    {k} = {json.dumps(v)}" for k, v in sorted(params.items()))
        writer = self._writer(run_id)
        writer.add_text("config", text, 0)
        writer.flush()

    def scalars(self, run_id: str, step: int, values: dict[str, float]) -> None:
        writer = self._writer(run_id)
        wall = time.time()
        for tag, value in values.items():
            writer.add_scalar(tag, value, step, walltime=wall)
        writer.flush()

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers = {}


def _wandb_id(run_id: str) -> str:
    """W&B run ids allow letters, digits, - and _: the run id where it fits, else a stable hash."""
    if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", run_id):
        return run_id
    return "mw-" + hashlib.sha256(run_id.encode()).hexdigest()[:32]


class WandbBackend:
    """The current run in W&B (``WANDB_PROJECT``); resumed by id in a restarted worker."""

    name = "wandb"

    def __init__(self, project: str) -> None:
        import wandb

        self._wandb = wandb
        self.project = project
        self._run: Any = None
        self._run_id: str | None = None

    def _open(self, run_id: str) -> Any:
        if self._run_id != run_id:
            self.close()
            self._run = self._wandb.init(
                project=self.project, id=_wandb_id(run_id), name=run_id, resume="allow", reinit="finish_previous"
            )
            # Every metric against the trainer step, each call committed at once: the step's own
            # metrics and its iteration's arrive as two calls at the same step, and W&B's own step
            # would have to hold the row open until the next one (lost if the worker dies).
            self._run.define_metric("global_step")
            self._run.define_metric("*", step_metric="global_step")
            self._run_id = run_id
        return self._run

    def config(self, run_id: str, params: dict[str, Scalar]) -> None:
        self._open(run_id).config.update(params, allow_val_change=True)

    def scalars(self, run_id: str, step: int, values: dict[str, float]) -> None:
        self._open(run_id).log({**values, "global_step": step})

    def close(self) -> None:
        if self._run is not None:
            self._run.finish()
        self._run = self._run_id = None


class MlflowBackend:
    """One MLflow run per mockworld run (tag ``mockworld.run_id``) in ``MLFLOW_EXPERIMENT_NAME``."""

    name = "mlflow"

    def __init__(self, tracking_uri: str, experiment: str) -> None:
        from mlflow.tracking import MlflowClient

        self._client = MlflowClient(tracking_uri=tracking_uri)
        self.experiment = experiment
        self._runs: dict[str, str] = {}

    def _run(self, run_id: str) -> str:
        if run_id in self._runs:
            return self._runs[run_id]
        found = self._client.get_experiment_by_name(self.experiment)
        experiment_id = found.experiment_id if found else self._client.create_experiment(self.experiment)
        tag = run_id.replace("'", "")
        existing = self._client.search_runs([experiment_id], f"tags.`mockworld.run_id` = '{tag}'", max_results=1)
        if existing:
            mlflow_id = existing[0].info.run_id
        else:
            created = self._client.create_run(experiment_id, tags={"mockworld.run_id": tag}, run_name=run_id)
            mlflow_id = created.info.run_id
        self._runs[run_id] = mlflow_id
        return mlflow_id

    def config(self, run_id: str, params: dict[str, Scalar]) -> None:
        from mlflow.entities import Param

        logged = [Param(k[:250], str(v)[:6000]) for k, v in sorted(params.items())]
        mlflow_id = self._run(run_id)
        for i in range(0, len(logged), 100):  # MLflow takes at most 100 params per batch
            self._client.log_batch(mlflow_id, params=logged[i : i + 100])

    def scalars(self, run_id: str, step: int, values: dict[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        # MLflow metric names allow letters, digits and _-./ and spaces.
        metrics = [Metric(re.sub(r"[^\w\-./ ]", "_", k), v, now, step) for k, v in values.items()]
        self._client.log_batch(self._run(run_id), metrics=metrics)

    def close(self) -> None:
        self._runs = {}


def backends_from_env(root: Path) -> list[Backend]:
    """The backends the environment asks for; one that cannot start is a warning, not an error."""
    wanted: list[tuple[str, Any]] = []
    if os.environ.get("MOCKWORLD_TENSORBOARD", "1") != "0":
        wanted.append(("tensorboard", lambda: TensorBoardBackend(root)))
    if os.environ.get("WANDB_PROJECT"):
        wanted.append(("wandb", lambda: WandbBackend(os.environ["WANDB_PROJECT"])))
    if os.environ.get("MLFLOW_TRACKING_URI"):
        uri, experiment = os.environ["MLFLOW_TRACKING_URI"], os.environ.get("MLFLOW_EXPERIMENT_NAME", "mockworld")
        wanted.append(("mlflow", lambda: MlflowBackend(uri, experiment)))
    started: list[Backend] = []
    for name, make in wanted:
        try:
            started.append(make())
        except ImportError as e:
            log.warning("experiment tracking: %s is off: %s (pip install 'mockworld-trainer[tracking]')", name, e)
        except Exception as e:
            log.warning("experiment tracking: %s is off: %s: %s", name, type(e).__name__, e)
    return started


class Tracker:
    """Writes each (run, source, step) once to every backend that still works."""

    def __init__(self, backends: list[Backend] | None = None, root: Path | None = None) -> None:
        self.root = root or tracking_dir()
        self.backends = backends_from_env(self.root) if backends is None else backends

    def _marker(self, run_id: str, name: str) -> Path:
        return run_dir(self.root, run_id) / ".tracked" / name

    def _each(self, what: str, call: Any) -> None:
        for backend in list(self.backends):
            try:
                call(backend)
            except Exception as e:
                log.warning(
                    "experiment tracking: %s failed on %s (%s: %s); it is off for the rest of this process, "
                    "training goes on",
                    backend.name, what, type(e).__name__, e,
                )
                self.backends.remove(backend)
                try:
                    backend.close()
                except Exception:
                    pass

    def track(
        self,
        run_id: str,
        step: int,
        source: str,
        metrics: dict[str, float],
        config: dict[str, Scalar] | None = None,
    ) -> bool:
        """Writes ``metrics`` at ``step`` (and ``config`` once per run and source); False when this
        (run, source, step) was written before or nothing is tracked. Never raises."""
        try:
            if not self.backends:
                return False
            done = self._marker(run_id, f"{source}-{step:08d}")
            if done.exists():
                return False
            done.parent.mkdir(parents=True, exist_ok=True)
            if config:
                config_done = self._marker(run_id, f"{source}-config")
                if not config_done.exists():
                    self._each(f"run {run_id} config", lambda b: b.config(run_id, config))
                    config_done.touch()
            self._each(f"run {run_id} step {step}", lambda b: b.scalars(run_id, step, metrics))
            done.touch()
            return True
        except Exception as e:  # the markers' directory itself: a full or read-only disk
            log.warning("experiment tracking: run %s step %d not tracked (%s: %s)", run_id, step, type(e).__name__, e)
            return False

    def close(self) -> None:
        self._each("close", lambda b: b.close())
