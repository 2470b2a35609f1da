"""Experiment tracking (tracking.py): what a step and an iteration write, once, and that no tracker
failure reaches a step. TensorBoard is read back with tensorboard's own EventAccumulator; W&B runs
offline and MLflow against a file store, both from the test extra."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from temporalio.testing import ActivityEnvironment
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from trainer_data import TINY

from mockworld_trainer import contract
from mockworld_trainer.activities import TrainerActivities
from mockworld_trainer.tracking import Tracker, backends_from_env, flat_config, numeric_leaves, run_dir

CFG = {"lr": 1e-3, "micro_batch_size": 4}
RUN = "grpo/tracked run"  # a slash and a space: the run's directory is one quoted path segment
ITERATION = {
    "iteration": 0,
    "policyVersion": "step-1",
    "rewardMean": 0.5,
    "rewardStd": None,
    "subGoalFraction": 0.75,
    "endReasons": {"final_answer": 3, "max_turns": 1},
    "evaluation": {"rewardMean": 0.25},
    "leftOut": {"unjudged": 0},
    "trainer": {"loss": 99.0},  # the step tracked its own: not written again from here
}
RUN_CONFIG = {"learningRate": 0.001, "globalBatch": 2, "sampling": {"temperature": 1, "apiKey": "sk-secret"}}


def board(root: Path, run_id: str = RUN) -> EventAccumulator:
    acc = EventAccumulator(str(run_dir(root, run_id)), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def event_bytes(root: Path, run_id: str = RUN) -> int:
    return sum(f.stat().st_size for f in run_dir(root, run_id).glob("events.out.tfevents.*"))


def step(acts: TrainerActivities, batch_ref: dict, n: int = 1) -> dict:
    request = {"run_id": RUN, "step": n, "batch_ref": batch_ref, "model": TINY, "config": CFG}
    return ActivityEnvironment().run(acts.grpo_step, request)


def track(acts: TrainerActivities, n: int = 1) -> dict:
    out = ActivityEnvironment().run(
        acts.track_iteration, {"run_id": RUN, "step": n, "metrics": ITERATION, "config": RUN_CONFIG}
    )
    assert contract.problems(contract.activity_schema("trainer.trackIteration", "output"), out) == []
    return out


def test_the_viewer_flattening_rule_and_secret_free_config():
    assert numeric_leaves(ITERATION) == {
        "iteration": 0.0,
        "rewardMean": 0.5,
        "subGoalFraction": 0.75,
        "endReasons.final_answer": 3.0,
        "endReasons.max_turns": 1.0,
        "evaluation.rewardMean": 0.25,
        "leftOut.unjudged": 0.0,
        "trainer.loss": 99.0,
    }
    assert numeric_leaves({"ok": True, "nan": float("nan"), "list": [1, 2]}) == {}
    assert flat_config(RUN_CONFIG, "run") == {
        "run.learningRate": 0.001,
        "run.globalBatch": 2,
        "run.sampling.temperature": 1,
    }


def test_a_step_and_its_iteration_write_tensorboard_events_that_read_back(trainer, batch_ref, tracking_in_tmp):
    acts = TrainerActivities(trainer)  # the default tracker: TensorBoard under MOCKWORLD_TENSORBOARD_DIR
    result = step(acts, batch_ref)
    assert result["replayed"] is False
    assert track(acts)["written"] is True

    acc = board(tracking_in_tmp)
    tags = set(acc.Tags()["scalars"])
    assert {"trainer.loss", "trainer.clip_frac", "trainer.reward_mean", "trainer.num_samples"} <= tags
    assert {"rewardMean", "subGoalFraction", "endReasons.max_turns", "evaluation.rewardMean", "leftOut.unjudged"} <= tags
    assert not tags & {"iteration", "policyVersion", "rewardStd"}  # the x axis, a string, a null
    (loss,) = acc.Scalars("trainer.loss")  # from the step, once: not the iteration's copy (99)
    assert loss.step == 1 and loss.value == pytest.approx(result["metrics"]["loss"])
    (reward,) = acc.Scalars("rewardMean")
    assert reward.step == 1 and reward.value == pytest.approx(0.5)
    assert acc.Scalars("evaluation.rewardMean")[0].value == pytest.approx(0.25)

    # The config once per source: the trainer's model and step settings, the workflow's hyper-parameters.
    texts = b"".join(t.tensor_proto.string_val[0] for t in acc.Tensors("config/text_summary")).decode()
    assert "trainer.model.kind" in texts and "trainer.step_config.lr" in texts
    assert "run.learningRate" in texts and "run.sampling.temperature" in texts
    assert "apiKey" not in texts and "sk-secret" not in texts


def test_a_replayed_step_and_a_retried_iteration_write_nothing_new(trainer, batch_ref, tracking_in_tmp):
    acts = TrainerActivities(trainer)
    step(acts, batch_ref)
    track(acts)
    written = event_bytes(tracking_in_tmp)

    again = TrainerActivities(trainer)  # a retry in a restarted worker: a new tracker, the same files
    assert step(again, batch_ref)["replayed"] is True
    assert track(again)["written"] is False
    assert event_bytes(tracking_in_tmp) == written
    assert len(board(tracking_in_tmp).Scalars("trainer.loss")) == 1

    step(again, batch_ref, n=2)  # the next applied step is written
    # Each writer has its own event file; the reader's order among files is not the steps' order.
    assert sorted(e.step for e in board(tracking_in_tmp).Scalars("trainer.loss")) == [1, 2]


class Broken:
    name = "broken"

    def __init__(self) -> None:
        self.calls = 0

    def config(self, run_id, params):
        self.calls += 1
        raise ConnectionError("tracking server unreachable")

    scalars = config

    def close(self):
        raise RuntimeError("and closing fails too")


class Recording:
    name = "recording"

    def __init__(self) -> None:
        self.scalar_steps: list[tuple[int, str]] = []

    def config(self, run_id, params):
        pass

    def scalars(self, run_id, step, values):
        self.scalar_steps.append((step, "trainer.loss" if "trainer.loss" in values else "iteration"))

    def close(self):
        pass


def test_a_broken_backend_never_fails_a_step(trainer, batch_ref, tmp_path, caplog):
    broken, recording = Broken(), Recording()
    acts = TrainerActivities(trainer, Tracker([broken, recording], root=tmp_path / "tb"))
    with caplog.at_level(logging.WARNING, logger="mockworld.tracking"):
        assert step(acts, batch_ref)["replayed"] is False
        assert track(acts)["written"] is True
        assert step(acts, batch_ref, n=2)["replayed"] is False
    assert broken.calls == 1  # switched off after its first failure: no step waits on it again
    assert "broken failed" in caplog.text and "training goes on" in caplog.text
    assert recording.scalar_steps == [(1, "trainer.loss"), (1, "iteration"), (2, "trainer.loss")]


def test_an_unwritable_tracking_directory_never_fails_a_step(trainer, batch_ref, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("MOCKWORLD_TENSORBOARD_DIR", str(blocker))
    acts = TrainerActivities(trainer)
    assert step(acts, batch_ref)["replayed"] is False
    assert track(acts)["written"] is False


def test_wandb_offline_receives_the_metrics_and_config(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("MOCKWORLD_TENSORBOARD", "0")
    monkeypatch.setenv("WANDB_PROJECT", "mockworld-test")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    tracker = Tracker(root=tmp_path / "markers")
    assert [b.name for b in tracker.backends] == ["wandb"]
    assert tracker.track("run-1", 1, "iteration", {"rewardMean": 0.5}, {"run.learningRate": 0.001})
    assert tracker.track("run-1", 2, "iteration", {"rewardMean": 0.75})
    run = tracker.backends[0]._run
    assert run.summary["rewardMean"] == 0.75 and run.summary["global_step"] == 2
    assert run.config["run.learningRate"] == 0.001
    tracker.close()
    assert [b.name for b in tracker.backends] == ["wandb"]  # finished without a failure
    (offline,) = (tmp_path / "wandb").glob("offline-run-*-run-1")
    assert list(offline.glob("*.wandb"))  # the record W&B syncs later (`wandb sync`)


def test_mlflow_file_store_receives_the_metrics_and_config(tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    uri = (tmp_path / "mlruns").as_uri()
    monkeypatch.setenv("MOCKWORLD_TENSORBOARD", "0")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 wants a database; skinny has no SQLAlchemy
    assert [b.name for b in backends_from_env(tmp_path)] == ["mlflow"]
    first = Tracker(root=tmp_path / "markers")
    assert first.track("run/1", 1, "iteration", {"rewardMean": 0.5}, {"run.learningRate": 0.001})
    second = Tracker(root=tmp_path / "markers")  # a restarted worker finds the same MLflow run by its tag
    assert second.track("run/1", 2, "iteration", {"rewardMean": 0.75, "evaluation.rewardMean": 0.25})

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("mockworld")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.data.tags["mockworld.run_id"] == "run/1"
    assert run.data.params == {"run.learningRate": "0.001"}
    history = client.get_metric_history(run.info.run_id, "rewardMean")
    assert [(m.step, m.value) for m in history] == [(1, 0.5), (2, 0.75)]
    assert run.data.metrics["evaluation.rewardMean"] == 0.25
