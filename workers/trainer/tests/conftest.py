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


@pytest.fixture
def store(tmp_path: Path) -> CheckpointStore:
    return CheckpointStore(tmp_path / "checkpoints", keep_last=2)


@pytest.fixture
def trainer(store: CheckpointStore) -> Trainer:
    return Trainer(store, device=torch.device("cpu"))


@pytest.fixture
def batch_ref(tmp_path: Path) -> dict:
    return write_jsonl(tmp_path / "batch.jsonl", rollout_batch())
