"""A trainer group on CPU: 2 processes under torchrun (gloo), FSDP2, DCP checkpoints, elastic restart.

Each test launches torchrun (tests/group_driver.py); a launch costs two interpreters importing torch
and transformers, so this file takes ~30-60 s on two shared cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from trainer_data import TINY, rollout_batch, write_jsonl

from mockworld_trainer.checkpoint import CheckpointStore
from mockworld_trainer.trainer import Trainer

TESTS = Path(__file__).parent
CFG = {"lr": 1e-3, "micro_batch_size": 2, "mini_batch_groups": 1}  # 2 groups: 2 AdamW updates per step
CPU = torch.device("cpu")


def torchrun(
    tmp: Path, root: Path, batch: dict, steps: int, *, max_restarts: int = 0, kill: str | None = None, save_fail: str | None = None
) -> list[dict]:
    out = tmp / "results.jsonl"
    env = {
        **os.environ,
        "MOCKWORLD_TRAINER_DEVICE": "cpu",
        "MOCKWORLD_TRAINER_ACTIVATION_CHECKPOINTING": "1",
        "PYTHONPATH": str(TESTS),
        "OMP_NUM_THREADS": "1",
    }
    if kill:
        env["MOCKWORLD_TEST_KILL"] = kill
    if save_fail:
        env["MOCKWORLD_TEST_SAVE_FAIL"] = save_fail
    torchrun = Path(sys.executable).with_name("torchrun")
    cmd = [str(torchrun), "--standalone", "--nproc-per-node", "2", "--max-restarts", str(max_restarts),
           str(TESTS / "group_driver.py"), str(root), batch["path"], str(steps), str(out)]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    return [json.loads(line) for line in out.read_text().splitlines()]


def weights(store: CheckpointStore, step: int, run: str) -> dict[str, torch.Tensor]:
    return load_file(store.step_dir(run, step) / "model" / "model.safetensors")


def adam_steps(trainer: Trainer, run: str) -> set[int]:
    """The AdamW step counters of the latest step's state, as the trainer resumes it."""
    latest = trainer.store.latest_step(run)
    state = trainer._load_state(run, latest, trainer._run_spec(run, None, latest))
    return {int(s["step"]) for s in state.optimizer.state.values()}


@pytest.fixture
def batch(tmp_path: Path) -> dict:
    return write_jsonl(tmp_path / "batch.jsonl", rollout_batch())


def test_an_fsdp_step_on_2_ranks_equals_the_single_process_step_and_resumes_on_1(tmp_path, batch):
    group = CheckpointStore(tmp_path / "group")
    results = torchrun(tmp_path, group.root, batch, 1)
    alone = Trainer(CheckpointStore(tmp_path / "alone"), device=CPU, ranks=None)
    expected = alone.train_step("run-g", 1, batch, model=TINY, config=CFG)

    got = results[0]["metrics"]
    assert got["world_size"] == 2 and len(got["peak_memory_bytes_per_rank"]) == 2
    for key in ("loss", "grad_norm", "approx_kl", "ratio_mean", "num_tokens", "num_updates"):
        assert got[key] == pytest.approx(expected["metrics"][key], rel=1e-5, abs=1e-8), key
    # Updated weights agree to 1e-6: float32 sums in another order (two ranks, reduce-scatter).
    a, b = weights(group, 1, "run-g"), weights(alone.store, 1, "run-g")
    assert a.keys() == b.keys()
    assert max(float((a[k] - b[k]).abs().max()) for k in a) < 1e-6
    assert (group.step_dir("run-g", 1) / "dcp" / ".metadata").exists()
    config = json.loads((group.step_dir("run-g", 1) / "model" / "config.json").read_text())
    assert config["architectures"] == ["Qwen3ForCausalLM"]  # not FSDP's wrapper class

    # The 2 ranks' checkpoint resumes in 1 process: weights and AdamW state from the DCP shards.
    resumed = Trainer(group, device=CPU)
    assert adam_steps(resumed, "run-g") == {2}
    step2 = resumed.train_step("run-g", 2, batch, model=TINY, config=CFG)
    straight = alone.train_step("run-g", 2, batch, model=TINY, config=CFG)
    assert step2["metrics"]["loss"] == pytest.approx(straight["metrics"]["loss"], rel=1e-5)
    a, b = weights(group, 2, "run-g"), weights(alone.store, 2, "run-g")
    assert max(float((a[k] - b[k]).abs().max()) for k in a) < 1e-5


def test_a_rank_killed_mid_step_restarts_the_group_and_the_run_makes_exactly_its_steps(tmp_path, batch):
    store = CheckpointStore(tmp_path / "ckpt")
    results = torchrun(tmp_path, store.root, batch, 3, max_restarts=1, kill="1:2")
    assert (tmp_path / "results.killed").read_text() == "rank 1 killed itself in step 2\n"
    # First attempt: step 1 applied, then the kill in step 2 stopped the group; the restarted group
    # (restart 1) found step 1 recorded, applied 2 from step 1's checkpoint, then 3.
    assert [(r["restart"], r["step"], r["replayed"]) for r in results] == [
        (0, 1, False),
        (1, 1, True),
        (1, 2, False),
        (1, 3, False),
    ]
    assert store.applied_steps("run-g") == [1, 2, 3]
    updates = sum(store.read_record("run-g", n)["metrics"]["num_updates"] for n in (1, 2, 3))
    assert updates == 6
    assert adam_steps(Trainer(store, device=CPU), "run-g") == {updates}  # never a step applied twice
    assert not list((store.root / "run-g").glob(".tmp-step-*"))  # the killed attempt's shards were not kept


def test_a_save_that_fails_on_one_rank_fails_the_step_on_every_rank_and_the_group_stays_up(tmp_path, batch):
    """A full disk under rank 0's weights: every rank raises GroupSaveFailed at the same point, the
    other rank goes on following (no exit, so torchrun does not restart the group), nothing of the
    step is kept, and the step applied again on the same group is applied once."""
    store = CheckpointStore(tmp_path / "ckpt")
    results = torchrun(tmp_path, store.root, batch, 3, save_fail="2")
    (failed,) = (tmp_path / "results.save-failed").read_text().splitlines()
    assert "run run-g step 2 was not saved: OSError: [Errno 28] No space left on device" in failed
    assert [(r["restart"], r["step"], r["replayed"]) for r in results] == [(0, 1, False), (0, 2, False), (0, 3, False)]
    assert store.applied_steps("run-g") == [1, 2, 3]
    updates = sum(store.read_record("run-g", n)["metrics"]["num_updates"] for n in (1, 2, 3))
    assert adam_steps(Trainer(store, device=CPU), "run-g") == {updates}
    assert not list((store.root / "run-g").glob(".tmp-step-*"))
