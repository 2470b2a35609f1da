"""The activities through temporalio's ActivityEnvironment: names, contract shapes, heartbeats, errors."""

from __future__ import annotations

import dataclasses
import json
import os
import time
import uuid
from datetime import timedelta

import pytest
import temporalio.api.failure.v1
import temporalio.converter
from temporalio import activity
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.testing import ActivityEnvironment
from trainer_data import TINY, make_pretrained_dir, rollout_batch, transcript, write_jsonl
from transformers import AutoModelForCausalLM, AutoTokenizer

from mockworld_trainer import contract
from mockworld_trainer.activities import TrainerActivities

CFG = {"lr": 1e-3, "micro_batch_size": 4}


def conforms(activity_name: str, out: dict) -> dict:
    """``out`` after checking it against the activity's output schema of the contract."""
    assert contract.problems(contract.activity_schema(activity_name, "output"), out) == []
    return out


@pytest.fixture
def env_and_beats():
    env, beats = ActivityEnvironment(), []
    env.on_heartbeat = lambda *details: beats.append(details[0])
    return env, beats


@pytest.fixture
def acts(trainer) -> TrainerActivities:
    return TrainerActivities(trainer)


def test_the_activities_are_registered_under_the_names_of_the_contract():
    names = [
        activity._Definition.must_from_callable(f).name for f in TrainerActivities.__new__(TrainerActivities).all()
    ]
    assert names == list(contract.activities()) == [
        "trainer.grpoStep",
        "trainer.sftStep",
        "trainer.saveCheckpoint",
        "trainer.registerRun",
        "trainer.latestPolicy",
        "trainer.trackIteration",
    ]


def test_grpo_step_applies_once_heartbeats_and_returns_a_small_json_result(acts, env_and_beats, batch_ref):
    env, beats = env_and_beats
    request = {"run_id": "wf-1", "step": 1, "batch_ref": batch_ref, "model": TINY, "config": CFG}
    out = conforms("trainer.grpoStep", env.run(acts.grpo_step, request))
    assert out["replayed"] is False and out["kind"] == "grpo"
    assert out["metrics"]["num_groups"] == 2 and out["metrics"]["zero_variance_groups"] == 0
    assert len(json.dumps(out)) < 4096  # claim-check: ids and small summaries only
    assert all(contract.problems("step-heartbeat", b) == [] for b in beats)
    phases = {b["phase"] for b in beats}
    assert {"start", "old_logprobs", "update", "save"} <= phases
    again = env.run(acts.grpo_step, request)
    assert again == {**out, "replayed": True}


def test_save_checkpoint_and_latest_policy_report_where_the_weights_are(acts, env_and_beats, batch_ref):
    env, _ = env_and_beats
    assert conforms("trainer.latestPolicy", env.run(acts.latest_policy, {"run_id": "wf-2"})) == {
        "run_id": "wf-2",
        "step": 0,
        "model_path": None,
        "adapter_path": None,
        "base_model": None,
        "kind": None,
        "metrics": None,
    }
    env.run(acts.grpo_step, {"run_id": "wf-2", "step": 1, "batch_ref": batch_ref, "model": TINY, "config": CFG})
    latest = conforms("trainer.latestPolicy", env.run(acts.latest_policy, {"run_id": "wf-2"}))
    assert latest["step"] == 1 and latest["kind"] == "grpo" and latest["base_model"]["kind"] == "tiny"
    assert os.path.isfile(os.path.join(latest["model_path"], "model.safetensors"))
    pinned = conforms("trainer.saveCheckpoint", env.run(acts.save_checkpoint, {"run_id": "wf-2"}))
    assert pinned == {"run_id": "wf-2", "step": 1, "model_path": latest["model_path"], "pinned": True}
    assert env.run(acts.save_checkpoint, {"run_id": "wf-2", "step": 1}) == pinned  # idempotent


def test_register_run_fixes_the_model_of_a_run_that_never_steps(acts, env_and_beats, batch_ref):
    env, _ = env_and_beats
    other = {**TINY, "seed": 1}
    registered = conforms("trainer.registerRun", env.run(acts.register_run, {"run_id": "wf-reg", "model": TINY}))
    assert registered["step"] == 0 and registered["base_model"]["kind"] == "tiny"
    assert acts.trainer.store.read_manifest("wf-reg")["model"]["seed"] == 0  # what the policy server serves at step 0
    assert env.run(acts.register_run, {"run_id": "wf-reg", "model": TINY}) == registered  # idempotent
    # Before any step the model may still change (the run was never trained with the first one) ...
    assert env.run(acts.register_run, {"run_id": "wf-reg", "model": other})["base_model"]["seed"] == 1
    # ... after a step it is fixed.
    env.run(acts.grpo_step, {"run_id": "wf-reg", "step": 1, "batch_ref": batch_ref, "model": other, "config": CFG})
    err = _application_error(env, acts.register_run, {"run_id": "wf-reg", "model": TINY})
    assert err.type == "TrainerStepMismatch" and err.non_retryable
    err = _application_error(env, acts.register_run, {"run_id": "wf-reg"})
    assert err.type == "TrainerBadRequest" and "model: required" in err.message


def _application_error(env, fn, request) -> ApplicationError:
    with pytest.raises(ApplicationError) as info:
        env.run(fn, request)
    return info.value


def test_errors_that_a_retry_cannot_fix_are_non_retryable_and_typed(acts, env_and_beats, batch_ref):
    env, _ = env_and_beats
    err = _application_error(env, acts.grpo_step, {"run_id": "wf-3", "step": 2, "batch_ref": batch_ref, "model": TINY})
    assert err.type == "TrainerStepOutOfOrder" and err.non_retryable and "apply step 1 first" in err.message
    err = _application_error(
        env, acts.grpo_step, {"run_id": "wf-3", "step": 1, "batch_ref": batch_ref, "model": TINY, "lr": 1}
    )
    assert err.type == "TrainerBadRequest" and "lr: unknown field (valid: batch_ref, config, model, run_id, step)" in err.message
    err = _application_error(
        env,
        acts.grpo_step,
        {
            "run_id": "wf-3",
            "step": 1,
            "batch_ref": batch_ref,
            "model": TINY,
            "config": {"eps_low": 1.5, "mini_batch_groups": 0},
        },
    )
    assert "config.eps_low" in err.message and "config.mini_batch_groups" in err.message
    err = _application_error(env, acts.save_checkpoint, {"run_id": "wf-3"})
    assert err.type == "TrainerBadRequest" and "step 0 is the base model" in err.message


def test_an_unscored_rollout_is_refused_with_its_record_named(acts, env_and_beats, tmp_path):
    env, _ = env_and_beats
    records = rollout_batch()
    records[3]["reward"] = None
    ref = write_jsonl(tmp_path / "unscored.jsonl", records)
    err = _application_error(env, acts.grpo_step, {"run_id": "wf-4", "step": 1, "batch_ref": ref, "model": TINY})
    assert err.type == "TrainerBadRequest" and "record[3].reward" in err.message


def test_sft_step_on_a_pretrained_directory_writes_a_servable_checkpoint(acts, env_and_beats, tmp_path):
    env, _ = env_and_beats
    base = make_pretrained_dir(tmp_path / "base")
    ref = write_jsonl(
        tmp_path / "sft.jsonl",
        [{"messages": transcript("Rolled back v2.1.")}, {"messages": transcript("Rolled back to v2.0.")}],
    )
    model = {"kind": "pretrained", "path": str(base)}
    out = env.run(
        acts.sft_step, {"run_id": "wf-5", "step": 1, "batch_ref": ref, "model": model, "config": {"lr": 1e-2}}
    )
    conforms("trainer.sftStep", out)
    assert out["kind"] == "sft" and out["metrics"]["num_tokens"] > 0
    # the step directory loads like any model directory, tokenizer and chat template included
    assert AutoTokenizer.from_pretrained(out["model_path"], local_files_only=True).chat_template
    assert AutoModelForCausalLM.from_pretrained(out["model_path"], local_files_only=True).config.vocab_size == 264
    assert env.run(acts.latest_policy, {"run_id": "wf-5"})["base_model"] == {**model, "dtype": "float32"}


def _postgres_admin():
    psycopg = pytest.importorskip("psycopg")
    url = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/mockworld")
    admin = url.rsplit("/", 1)[0] + "/postgres"
    try:
        return psycopg, admin, psycopg.connect(admin, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as e:
        pytest.skip(f"PostgreSQL not reachable at {admin}: {e}")


def test_grpo_step_reads_a_batch_from_the_trainer_batches_table(acts, env_and_beats, monkeypatch):
    psycopg, admin, conn = _postgres_admin()
    db = f"mockworld_trainer_test_{uuid.uuid4().hex[:8]}"
    conn.execute(f'CREATE DATABASE "{db}"')
    try:
        url = admin.rsplit("/", 1)[0] + "/" + db
        with psycopg.connect(url, autocommit=True) as c:
            c.execute(
                "CREATE TABLE trainer_batches (run_id text NOT NULL, step integer NOT NULL, payload jsonb NOT NULL)"
            )
            for r in rollout_batch():
                c.execute("INSERT INTO trainer_batches VALUES (%s, %s, %s)", ("wf-6", 1, json.dumps(r)))
            c.execute("INSERT INTO trainer_batches VALUES ('other-run', 1, '{}')")
        monkeypatch.setenv("DATABASE_URL", url)
        env, _ = env_and_beats
        out = env.run(
            acts.grpo_step,
            {"run_id": "wf-6", "step": 1, "batch_ref": {"kind": "postgres"}, "model": TINY, "config": CFG},
        )
        assert out["metrics"]["num_samples"] == 8 and out["metrics"]["num_groups"] == 2
    finally:
        conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        conn.close()


def test_a_slow_save_keeps_heartbeating_from_the_background_thread(acts, env_and_beats, batch_ref, monkeypatch):
    env, beats = env_and_beats
    env.info = dataclasses.replace(env.info, heartbeat_timeout=timedelta(seconds=0.9))  # beat every 0.5 s
    slow_save = acts.trainer.store.save_step

    def save_step(*args, **kwargs):
        time.sleep(1.6)
        return slow_save(*args, **kwargs)

    monkeypatch.setattr(acts.trainer.store, "save_step", save_step)
    env.run(acts.grpo_step, {"run_id": "wf-7", "step": 1, "batch_ref": batch_ref, "model": TINY, "config": CFG})
    during_save = [b for b in beats if b == {"phase": "save", "done": 0, "total": 1}]
    assert len(during_save) >= 3  # one on entering the phase, then the background thread's


def test_a_failure_of_no_contract_type_is_retryable_and_small_enough_for_temporal(acts, env_and_beats, batch_ref, monkeypatch):
    """A torch error through FSDP's collectives (a rank of the group gone) has a traceback longer than
    the 4 KB Temporal keeps of a pending activity's failure: it is reported as a retryable
    ApplicationError of its type name, its message and where it was raised, well under that."""
    env, _ = env_and_beats

    def deep(n: int) -> None:
        if n == 0:
            raise RuntimeError("[gloo/transport/tcp/pair.cc:537] Read error: Connection reset by peer. " + "x" * 5_000)
        deep(n - 1)

    monkeypatch.setattr(acts.trainer, "train_step", lambda *a, **k: deep(60))
    with pytest.raises(ApplicationError) as info:
        env.run(acts.grpo_step, {"run_id": "run-fail", "step": 1, "batch_ref": batch_ref, "model": TINY})
    err = info.value
    assert err.type == "RuntimeError" and not err.non_retryable
    assert err.message.startswith("RuntimeError: [gloo/transport/tcp/pair.cc:537] Read error: Connection reset by peer.")
    assert " characters) (at " in err.message and "in deep" in err.message and len(err.message) < 2_000
    failure = temporalio.api.failure.v1.Failure()
    temporalio.converter.DefaultFailureConverter().to_failure(err, temporalio.converter.default().payload_converter, failure)
    assert failure.ByteSize() < 4_096


def test_a_cancelled_step_stops_at_a_safe_point_unapplied_and_the_next_attempt_applies_it(acts, batch_ref, tmp_path):
    env, phases = ActivityEnvironment(), []

    def on_heartbeat(details: dict) -> None:
        phases.append(details["phase"])
        if details["phase"] == "old_logprobs":
            env.cancel()  # the run is cancelled while the step computes

    env.on_heartbeat = on_heartbeat
    request = {"run_id": "wf-cancel", "step": 1, "batch_ref": batch_ref, "model": TINY, "config": CFG}
    with pytest.raises(CancelledError) as cancelled:
        env.run(acts.grpo_step, request)
    # Raised at the safe point (the SDK's own pending cancellation may replace it on the way out).
    chain = [cancelled.value, cancelled.value.__context__]
    assert any("before the step was applied" in str(e) for e in chain if e is not None)
    assert "save" not in phases and "update" not in phases  # left before any optimizer update
    assert acts.trainer.store.latest_step("wf-cancel") == 0
    # Not applied, so a later attempt applies it, from the weights of the last committed step.
    out = ActivityEnvironment().run(acts.grpo_step, request)
    assert out["replayed"] is False and acts.trainer.store.latest_step("wf-cancel") == 1
