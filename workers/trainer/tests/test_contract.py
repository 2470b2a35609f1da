"""The contract files (schemas/json/trainer/, emitted from zod): what the trainer accepts is what the
TypeScript side accepts at a run's start, and a refusal names the path and says why."""

from __future__ import annotations

import math

import pytest
from trainer_data import TINY, rollout_batch

from mockworld_trainer import contract
from mockworld_trainer.batches import parse_batch_ref, parse_records
from mockworld_trainer.config import parse_model_spec, parse_step_config
from mockworld_trainer.errors import BadRequestError, TrainerError

STEP = {"run_id": "wf-c", "step": 1, "batch_ref": {"kind": "postgres"}, "model": TINY}


def refusal(name: str, data) -> str:
    """The message of the BadRequestError that validating ``data`` against ``name`` raises."""
    with pytest.raises(BadRequestError) as info:
        contract.validate(name, data, name)
    return str(info.value)


def test_every_contract_file_is_a_valid_json_schema_and_names_its_activities():
    assert set(contract.activities()) == {
        "trainer.grpoStep",
        "trainer.sftStep",
        "trainer.saveCheckpoint",
        "trainer.registerRun",
        "trainer.latestPolicy",
        "trainer.trackIteration",
    }
    for files in contract.activities().values():
        for file in files.values():
            assert contract.schema(file.removesuffix(".json"))["$schema"].endswith("2020-12/schema")


def test_the_error_types_are_the_contracts():
    names = {cls.type_name for cls in TrainerError.__subclasses__()}
    assert names == set(contract.schema("error-types")["enum"])


def test_clip_bounds_are_the_specs_both_strictly_between_0_and_1():
    # zod (GrpoTraining clipLow / clipHigh) said > 0 and < 1 while the trainer took eps_high >= 0.
    for eps_high in (0, 1, 1.5, -0.1):
        message = refusal("step-input", {**STEP, "config": {"eps_high": eps_high}})
        assert "config.eps_high: must be" in message and f"got {eps_high}" in message
    for eps_low in (0, 1):
        assert "config.eps_low: must be" in refusal("step-input", {**STEP, "config": {"eps_low": eps_low}})
    cfg = parse_step_config({"eps_low": 0.1, "eps_high": 0.9})
    assert (cfg.eps_low, cfg.eps_high) == (0.1, 0.9)


def test_float16_is_refused_as_a_dtype_with_the_reason():
    model = {"kind": "pretrained", "path": "/models/q", "dtype": "float16"}
    message = refusal("step-input", {**STEP, "model": model})
    assert "model.dtype: expected one of 'float32', 'bfloat16', got 'float16'" in message
    assert "float16 is not trainable here" in message
    assert parse_model_spec({**model, "dtype": "bfloat16"}).dtype == "bfloat16"


def test_an_unknown_model_kind_names_the_kinds_there_are():
    message = refusal("model-spec", {"kind": "huge", "path": "/m"})
    assert "kind: expected one of 'tiny', 'pretrained', 'gguf', got 'huge'" in message
    assert "seed" not in message  # the branch's own errors are not listed for a kind that is neither


def test_a_tiny_model_is_checked_in_the_branch_its_kind_names():
    message = refusal("model-spec", {"kind": "tiny", "seed": -1, "hidden_size": "32", "path": "/m"})
    assert "seed: must be >= 0, got -1" in message
    assert "hidden_size: expected an integer, got '32'" in message
    assert "path: unknown field" in message
    with pytest.raises(BadRequestError, match="model.num_heads: num_heads must divide hidden_size"):
        parse_model_spec({**TINY, "hidden_size": 30})


def test_defaults_come_from_the_contract():
    cfg = parse_step_config(None)
    assert (cfg.eps_low, cfg.eps_high, cfg.mini_batch_groups, cfg.lr) == (0.2, 0.28, 16, 1e-6)
    assert isinstance(cfg.max_grad_norm, float)  # the JSON default 1 is a float field
    assert parse_model_spec({"kind": "tiny"}) == parse_model_spec(TINY)
    assert parse_model_spec({"kind": "pretrained", "path": "/m"}).dtype == "float32"
    assert parse_batch_ref({"kind": "postgres"}, "wf-c", 3) == {
        "kind": "postgres",
        "table": "trainer_batches",
        "run_id": "wf-c",
        "step": 3,
    }


def test_a_learning_rate_of_0_is_a_step_that_moves_nothing_not_an_error():
    # ScalingStudy's cosine schedule ends at minLearningRate, which may be 0.
    assert parse_step_config({"lr": 0}).lr == 0.0
    assert "config.lr: must be <= 1" in refusal("step-input", {**STEP, "config": {"lr": 2}})


def test_integers_are_integers_and_numbers_are_finite():
    assert "step: expected an integer, got 1.0" in refusal("step-input", {**STEP, "step": 1.0})
    assert "step: expected an integer, got True" in refusal("step-input", {**STEP, "step": True})
    message = refusal("step-input", {**STEP, "config": {"kl_coef": math.nan}})
    assert "config.kl_coef: expected a finite number, got nan" in message
    assert "step 0 is the initial policy" in refusal("step-input", {**STEP, "step": 0})


def test_a_bad_batch_names_each_record_and_never_prints_a_transcript():
    records = rollout_batch()
    records[0]["reward"] = math.inf
    records[1]["messages"] = [m for m in records[1]["messages"] if m["role"] != "assistant"]
    records[2]["group_id"] = 1.5
    records[3]["messages"][0]["role"] = "robot"
    records[4]["tools"] = "get_logs"
    with pytest.raises(BadRequestError) as info:
        parse_records(records, grpo=True, source="test")
    message = str(info.value)
    assert "record[0].reward: expected a finite number, got inf" in message
    assert "record[1].messages: " in message and "assistant turn" in message
    assert "record[2].group_id: expected a string or an integer, got 1.5" in message
    assert "record[3].messages[0].role: expected one of 'system', 'user', 'assistant', 'tool', got 'robot'" in message
    assert "record[4].tools: expected a list or null, got 'get_logs'" in message
    assert "SRE agent" not in message and len(message) < 2000


def test_other_keys_of_a_record_are_ignored_as_before():
    records = [{**r, "episode_id": "e1"} for r in rollout_batch()]
    assert len(parse_records(records, grpo=True, source="test")) == len(records)
    assert parse_records([{"messages": records[0]["messages"]}], grpo=False, source="test")[0].reward is None
