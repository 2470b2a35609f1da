"""Shared fixtures: a tiny random policy, rollout transcripts, a checkpoint directory per test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)  # a 27k-parameter model gains nothing from threads, and CI's 2 cores are shared

from trainer_data import rollout_batch, write_jsonl  # noqa: E402

from mockworld_trainer.checkpoint import CheckpointStore  # noqa: E402
from mockworld_trainer.trainer import Trainer  # noqa: E402


@pytest.fixture(autouse=True)
def tracking_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Experiment tracking (on by default: TensorBoard) writes under the test's directory, never ~."""
    root = tmp_path / "tensorboard"
    monkeypatch.setenv("MOCKWORLD_TENSORBOARD_DIR", str(root))
    for name in ("WANDB_PROJECT", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(name, raising=False)
    return root


@pytest.fixture
def store(tmp_path: Path) -> CheckpointStore:
    return CheckpointStore(tmp_path / "checkpoints", keep_last=2)


@pytest.fixture
def trainer(store: CheckpointStore) -> Trainer:
    return Trainer(store, device=torch.device("cpu"))


@pytest.fixture
def batch_ref(tmp_path: Path) -> dict:
    return write_jsonl(tmp_path / "batch.jsonl", rollout_batch())
