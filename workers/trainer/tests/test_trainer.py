"""Exactly-once steps by (run, step), in-order application, atomic checkpoints, resume, retention."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file
from trainer_data import TINY

from mockworld_trainer import checkpoint as checkpoint_module
from mockworld_trainer.checkpoint import CheckpointStore
from mockworld_trainer.errors import BadRequestError, CheckpointMissingError, StepMismatchError, StepOutOfOrderError
from mockworld_trainer import trainer as trainer_module
from mockworld_trainer.trainer import Trainer

CFG = {"lr": 1e-3, "micro_batch_size": 8}
CPU = torch.device("cpu")


def step(trainer: Trainer, n: int, ref: dict, run: str = "run-1", **kw) -> dict:
    return trainer.train_step(run, n, ref, model=TINY, config=CFG, **kw)


def weights(trainer: Trainer, n: int, run: str = "run-1") -> dict[str, torch.Tensor]:
    return load_file(trainer.store.step_dir(run, n) / "model" / "model.safetensors")


def params(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in trainer._state.policy.model.state_dict().items()}


def test_a_repeated_step_returns_the_recorded_result_and_does_not_step_again(trainer, store, batch_ref):
    first = step(trainer, 1, batch_ref)
    assert first["replayed"] is False and first["step"] == 1 and first["kind"] == "grpo"
    in_memory, on_disk = params(trainer), weights(trainer, 1)
    mtime = (store.step_dir("run-1", 1) / "model" / "model.safetensors").stat().st_mtime_ns

    again = step(trainer, 1, batch_ref)
    assert again == {**first, "replayed": True}
    assert all(torch.equal(v, params(trainer)[k]) for k, v in in_memory.items())
    assert all(torch.equal(v, weights(trainer, 1)[k]) for k, v in on_disk.items())
    assert (store.step_dir("run-1", 1) / "model" / "model.safetensors").stat().st_mtime_ns == mtime

    restarted = Trainer(CheckpointStore(store.root), device=CPU)  # a new process sees the same record
    assert step(restarted, 1, batch_ref) == again and restarted._state is None


def test_an_out_of_order_step_is_refused_and_says_which_step_comes_first(trainer, batch_ref):
    with pytest.raises(StepOutOfOrderError, match="latest applied step is 0; apply step 1 first"):
        step(trainer, 2, batch_ref)
    step(trainer, 1, batch_ref)
    with pytest.raises(
        StepOutOfOrderError, match="step 3 was asked for but the latest applied step is 1; apply step 2 first"
    ):
        step(trainer, 3, batch_ref)
    with pytest.raises(BadRequestError, match="step 0 is the initial policy"):
        step(trainer, 0, batch_ref)


def test_a_repeat_with_another_batch_kind_or_model_is_refused(trainer, batch_ref, tmp_path):
    step(trainer, 1, batch_ref)
    other = {"kind": "jsonl", "path": str(tmp_path / "other.jsonl")}
    with pytest.raises(StepMismatchError, match="step 1 was applied as grpo"):
        step(trainer, 1, other)
    with pytest.raises(StepMismatchError, match="now asked as sft"):
        step(trainer, 1, batch_ref, kind="sft")
    with pytest.raises(StepMismatchError, match="trains model"):
        trainer.train_step("run-1", 2, batch_ref, model={**TINY, "seed": 7}, config=CFG)


def test_a_fresh_process_resumes_from_the_checkpoint_exactly_as_if_it_had_kept_running(tmp_path, batch_ref):
    kept = Trainer(CheckpointStore(tmp_path / "a"), device=CPU)
    for n in (1, 2, 3):
        step(kept, n, batch_ref)
    store_b = CheckpointStore(tmp_path / "b")
    for n in (1, 2, 3):  # a new Trainer (new process) for every step: model and AdamW state from disk
        step(Trainer(store_b, device=CPU), n, batch_ref)
    a, b = weights(kept, 3), load_file(store_b.step_dir("run-1", 3) / "model" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_retention_keeps_every_record_and_the_weights_of_the_newest_and_pinned_steps(trainer, store, batch_ref):
    step(trainer, 1, batch_ref)
    assert trainer.save_checkpoint("run-1")["step"] == 1  # pin step 1
    for n in (2, 3, 4):
        step(trainer, n, batch_ref)
    has_weights = {n: (store.step_dir("run-1", n) / "model" / "config.json").exists() for n in (1, 2, 3, 4)}
    assert has_weights == {1: True, 2: False, 3: True, 4: True}
    has_optimizer = {n: (store.step_dir("run-1", n) / "optimizer.pt").exists() for n in (1, 2, 3, 4)}
    assert has_optimizer == {1: False, 2: False, 3: True, 4: True}
    assert step(trainer, 2, batch_ref)["replayed"] is True  # the record outlives the weights
    with pytest.raises(CheckpointMissingError, match="pruned"):
        trainer.save_checkpoint("run-1", 2)
    latest = trainer.latest_policy("run-1")
    assert latest["step"] == 4 and latest["model_path"].endswith("step-00000004/model")


def test_a_crash_while_saving_leaves_no_step_behind_and_the_retry_applies_it_from_clean_state(
    tmp_path, batch_ref, monkeypatch
):
    clean = Trainer(CheckpointStore(tmp_path / "clean"), device=CPU)
    step(clean, 1, batch_ref)
    crashy = Trainer(CheckpointStore(tmp_path / "crash"), device=CPU)

    def disk_full(*args, **kwargs):
        raise OSError("No space left on device")

    with monkeypatch.context() as m:
        m.setenv("MOCKWORLD_CHECKPOINT_DISK_WAIT_S", "0")  # no wait for space: the attempt fails
        m.setattr(checkpoint_module.torch, "save", disk_full)
        with pytest.raises(OSError, match="No space left"):
            step(crashy, 1, batch_ref)
    assert crashy.store.latest_step("run-1") == 0 and crashy._state is None
    assert [p.name for p in crashy.store.run_dir("run-1").iterdir()] == ["run.json"]  # no step, no temp dir
    assert step(crashy, 1, batch_ref)["replayed"] is False
    a, b = weights(clean, 1), weights(crashy, 1)
    assert all(torch.equal(a[k], b[k]) for k in a)  # the retry started from step 0, not a half-applied model


def test_a_full_disk_at_the_save_waits_for_space_and_saves_the_step_computed_once(tmp_path, batch_ref, monkeypatch):
    clean = Trainer(CheckpointStore(tmp_path / "clean"), device=CPU)
    step(clean, 1, batch_ref)
    full = Trainer(CheckpointStore(tmp_path / "full"), device=CPU)
    real_save, refusals, waits, updates = checkpoint_module.torch.save, [2], [], []

    def save_when_freed(*args, **kwargs):
        if refusals[0]:
            refusals[0] -= 1
            raise OSError(28, "No space left on device")
        return real_save(*args, **kwargs)

    real_update = trainer_module.grpo_update
    monkeypatch.setattr(trainer_module, "grpo_update", lambda *a, **k: updates.append(1) or real_update(*a, **k))
    monkeypatch.setattr(checkpoint_module.torch, "save", save_when_freed)
    monkeypatch.setattr(checkpoint_module.time, "sleep", waits.append)
    assert step(full, 1, batch_ref)["replayed"] is False
    assert waits == [1.0, 2.0] and len(updates) == 1  # two waits for space, one computed step
    assert sorted(p.name for p in full.store.run_dir("run-1").iterdir()) == ["run.json", "step-00000001"]
    a, b = weights(clean, 1), weights(full, 1)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_save_that_fails_for_another_reason_is_not_waited_on(tmp_path, batch_ref, monkeypatch):
    trainer = Trainer(CheckpointStore(tmp_path), device=CPU)

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(checkpoint_module.torch, "save", denied)
    monkeypatch.setattr(checkpoint_module.time, "sleep", lambda s: pytest.fail("waited on a permission error"))
    with pytest.raises(PermissionError):
        step(trainer, 1, batch_ref)


def test_of_two_workers_racing_on_one_step_the_first_rename_wins_and_both_answer_with_it(store, batch_ref, monkeypatch):
    a, b = Trainer(store, device=CPU), Trainer(store, device=CPU)
    won = step(a, 1, batch_ref)
    monkeypatch.setattr(b.store, "latest_step", lambda run_id: 0)  # b looked before a's rename landed
    lost = step(b, 1, batch_ref)
    monkeypatch.undo()
    assert lost == {**won, "replayed": True} and b._state is None
    assert step(b, 2, batch_ref)["replayed"] is False  # b goes on from a's step-1 weights on disk


def test_the_first_step_must_name_the_model_and_later_steps_may_omit_it(trainer, batch_ref):
    with pytest.raises(BadRequestError, match="'model' is required"):
        trainer.train_step("run-2", 1, batch_ref)
    step(trainer, 1, batch_ref, run="run-2")
    assert trainer.train_step("run-2", 2, batch_ref, config=CFG)["step"] == 2
    assert trainer.latest_policy("run-2")["base_model"]["kind"] == "tiny"


def test_the_optional_kl_term_measures_the_distance_to_the_step_zero_policy(trainer, batch_ref):
    first = trainer.train_step("run-kl", 1, batch_ref, model=TINY, config={**CFG, "kl_coef": 0.1})
    assert first["metrics"]["ref_kl"] == 0.0  # one on-policy update: pi_theta was still pi_ref
    second = trainer.train_step("run-kl", 2, batch_ref, config={**CFG, "kl_coef": 0.1})
    assert second["metrics"]["ref_kl"] > 0.0
    assert "ref_kl" not in step(trainer, 1, batch_ref)["metrics"]  # off by default
