"""The contract comes from schemas/json/eval/ (emitted from schemas/evaluation-contract.ts): the
worker serves the activities it lists, refuses what it refuses naming each field, fills in the
defaults it declares, and stores a trial's settings as it always has (their hash keys the rows)."""

from __future__ import annotations

import hashlib
import json

import pytest

from mockworld_eval import activities, contract
from mockworld_eval.contract import ContractError, ListTasksInput, SummarizeInput, TrialInput, TrialSummary
from mockworld_eval.metrics import summarize

BFCL = {
    "evaluationId": "e",
    "benchmark": "bfcl",
    "group": "multi_turn_base",
    "taskId": "multi_turn_base_1",
    "trial": 0,
    "trials": 2,
    "policy": {"baseUrl": "http://x/v1", "model": "m"},
}


def test_the_worker_serves_exactly_the_contracts_activities_and_error_types():
    served = {defn.__temporal_activity_definition.name for defn in activities.ACTIVITIES}
    assert served == set(contract.activities()) == {contract.RUN_TRIAL, contract.LIST_TASKS, contract.SUMMARIZE}
    assert set(activities.ERROR_TYPES) == set(contract.error_types())


def test_the_defaults_are_filled_and_the_settings_dump_as_before():
    spec = TrialInput(BFCL)
    assert (spec.split, spec.max_steps, spec.max_errors, spec.seed) == ("base", 200, 10, 300)
    assert spec.sampling.temperature == 0.0 and spec.sampling.top_p is None and spec.user is None
    # What the pydantic models dumped (and what eval_trials.config of earlier runs holds): every
    # field, None where left out, a `number` as a float. The config hash is of this.
    expected = {
        **BFCL,
        "policy": {"baseUrl": "http://x/v1", "model": "m", "apiKeyEnv": None},
        "sampling": {"temperature": 0.0, "topP": None, "maxTokens": None},
        "user": None,
        "userSampling": {"temperature": 0.0, "topP": None, "maxTokens": None},
        "split": "base",
        "maxSteps": 200,
        "maxErrors": 10,
        "seed": 300,
    }
    # The trial's wall-clock bound is filled in too, and left out of the stored config: it decides
    # whether a stuck trial ends, not its score, so rows stored before it existed still match.
    assert contract.dump(spec) == {**expected, "wallSeconds": 1800}
    config = {key: value for key, value in contract.dump(spec).items() if key != "wallSeconds"}
    assert activities.trial_config(spec)["trial"] == {key: value for key, value in config.items() if key != "evaluationId"}
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    assert hashlib.sha256(text.encode()).hexdigest() == hashlib.sha256(
        json.dumps(expected, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()
    assert "0.0" in json.dumps(TrialInput({**BFCL, "sampling": {"temperature": 0}}).dump()["sampling"])
    assert TrialInput.parse_json(json.dumps(spec.as_json())) == spec
    assert contract.dump(ListTasksInput({"benchmark": "tau2", "group": "airline"}))["split"] == "base"
    summary = SummarizeInput(evaluationId="e")
    assert (summary.bootstrap_samples, summary.confidence, summary.seed, summary.compare_with) == (2000, 0.95, 0, None)


def test_a_malformed_input_names_every_bad_field():
    with pytest.raises(ContractError) as bad:
        TrialInput(
            {**BFCL, "benchmark": "nope", "trial": -1, "color": "red", "policy": {"baseUrl": "", "model": "m", "apiKeyEnv": "key"}}
        )
    message = str(bad.value)
    for field in ("benchmark", "trial", "color: unknown field", "policy.baseUrl", "policy.apiKeyEnv"):
        assert field in message, field
    with pytest.raises(ContractError, match="evaluationId: required"):
        SummarizeInput(confidence=0.5)
    with pytest.raises(ContractError, match="finite"):
        SummarizeInput(evaluationId="e", confidence=float("nan"))
    with pytest.raises(ContractError, match="not JSON"):
        TrialInput.parse_json("{")
    with pytest.raises(AttributeError, match="no field"):
        TrialInput(BFCL).task  # noqa: B018 - a misspelt field is an error, not None


def test_outputs_match_their_schemas():
    row = dict(evaluationId="e", benchmark="bfcl", group="g", taskId="t", trial=0, reward=1, termination="completed")
    summary = TrialSummary(**row, steps=3, promptTokens=1, completionTokens=2, failure=None, stored=False)
    assert summary.dump()["reward"] == 1.0 and summary.dump()["failure"] is None
    with pytest.raises(ContractError, match="stored: required"):
        TrialSummary(**row, steps=3, promptTokens=1, completionTokens=2, failure=None)
    rows = [
        {"benchmark": "bfcl", "task_group": "multi_turn_base", "task_id": t, "trial": 0, "reward": r, "termination": "completed",
         "failure": None, "prompt_tokens": 1, "completion_tokens": 1, "config_hash": "h"}
        for t, r in (("a", 1.0), ("b", 0.0))
    ]
    spec = SummarizeInput(evaluationId="e", compareWith="o", bootstrapSamples=100)
    assert contract.problems("evaluation-metrics", summarize(rows, rows, spec)) == []


def test_the_files_are_found_in_the_variable_when_set(tmp_path, monkeypatch):
    monkeypatch.setenv("MOCKWORLD_EVAL_CONTRACT_DIR", str(tmp_path))
    assert contract.contract_dir() == tmp_path
    monkeypatch.delenv("MOCKWORLD_EVAL_CONTRACT_DIR")
    assert (contract.contract_dir() / "trial-input.json").is_file()
