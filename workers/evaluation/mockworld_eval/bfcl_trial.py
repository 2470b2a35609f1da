"""One BFCL-V4 multi-turn trial through BFCL's own code: the OpenAI function-calling handler's
inference loop (`inference_multi_turn_FC`, its step limit and holdout-function turns included) and
`multi_turn_checker`.

Runs only inside a trial subprocess (trial.py): BFCL keeps every environment instance in a module
global keyed by model name and entry id, so a second trial in the same process would start from the
first one's final state. `BFCL_PROJECT_ROOT` must point at a scratch directory before the first
import (BFCL creates result/ and score/ there at import). The handler module is imported directly:
BFCL's model registry (constants/model_config.py) imports every vendor SDK.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any, Callable

from .contract import BFCL_CATEGORIES, TrialInput
from .outcome import InputError, Outcome, endpoint_key

# The model name BFCL keys its environment instances and the checker's by (the trial is alone in
# its process, so any fixed name works; the checker appends "_eval" and "_ground_truth_eval").
INSTANCE_NAME = "mockworld_policy"


def load_entries(category: str) -> tuple[dict[str, dict], dict[str, list]]:
    """Every entry of the category as BFCL's generation loads it (function docs populated, holdout
    functions split off), and every ground truth, by entry id."""
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

    if category not in BFCL_CATEGORIES:
        raise InputError(f"BFCL category {category!r} is not one of {', '.join(BFCL_CATEGORIES)}")
    entries = {e["id"]: e for e in load_dataset_entry(category)}
    truth = {e["id"]: e["ground_truth"] for e in load_ground_truth_entry(category)}
    return entries, truth


def load_entry(category: str, task_id: str) -> tuple[dict, list]:
    """One entry, as load_entries loads it, and its ground truth."""
    entries, truth = load_entries(category)
    if task_id not in entries:
        raise InputError(f"BFCL {category} has no entry {task_id!r} ({len(entries)} entries)")
    return entries[task_id], truth[task_id]


def entry_ids(category: str) -> list[str]:
    from bfcl_eval.utils import load_dataset_entry, sort_key

    if category not in BFCL_CATEGORIES:
        raise InputError(f"BFCL category {category!r} is not one of {', '.join(BFCL_CATEGORIES)}")
    return [e["id"] for e in sorted(load_dataset_entry(category), key=sort_key)]


def _handler(spec: TrialInput, on_step: Callable[[int], None]):
    from bfcl_eval.model_handler.api_inference.openai_completion import OpenAICompletionsHandler

    class CountingHandler(OpenAICompletionsHandler):
        """The official handler; each model query is also reported as a step (for heartbeats)."""

        steps = 0

        def _build_client_kwargs(self):
            # No model call waits longer than the whole trial may run (the SDK's default is 10 min).
            return {**super()._build_client_kwargs(), "timeout": float(spec.wall_seconds)}

        def _query_FC(self, inference_data: dict):
            CountingHandler.steps += 1
            on_step(CountingHandler.steps)
            return super()._query_FC(inference_data)

    # The handler's OpenAI client is configured from the environment, by design (BFCL's own way).
    base_url, api_key = endpoint_key(spec.policy)
    os.environ["OPENAI_BASE_URL"] = base_url
    os.environ["OPENAI_API_KEY"] = api_key
    os.environ["OPENAI_DEFAULT_HEADERS"] = json.dumps(trial_headers(spec, "policy"))
    return CountingHandler(
        model_name=spec.policy.model,
        temperature=spec.sampling.temperature,
        registry_name=f"{spec.policy.model}-FC",
        is_fc_model=True,
    )


def trial_headers(spec: TrialInput, role: str) -> dict[str, str]:
    """Sent with every model request of the trial, so a gateway's logs (or a scripted test server)
    can tell which benchmark task and trial a request belongs to."""
    return {
        "X-Mockworld-Role": role,
        "X-Mockworld-Eval-Task": f"{spec.benchmark}/{spec.group}/{spec.task_id}/{spec.trial}",
    }


def check(handler: Any, entry: dict, truth: list, result: Any) -> dict:
    """BFCL's scoring of one multi-turn entry, as its eval runner does it: a result that is not a list
    of turns is an inference error; fewer turns than the ground truth means the step limit forced the
    entry to quit; otherwise every step is decoded (undecodable and empty steps are skipped) and
    `multi_turn_checker` compares states and responses turn by turn."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import is_empty_execute_response

    if not isinstance(result, list):
        return {"valid": False, "error_type": "multi_turn:inference_error", "error_message": str(result)}
    if len(result) != len(truth):
        return {
            "valid": False,
            "error_type": "multi_turn:force_terminated",
            "error_message": f"{len(result)} turns answered of {len(truth)}: the step limit ended the entry",
        }
    decoded: list[list[list[str]]] = []
    for turn in result:
        steps = []
        for step in turn:
            try:
                calls = handler.decode_execute(step, has_tool_call_tag=False)
            except Exception:  # BFCL skips what does not decode: a chatting step is no call
                continue
            if not is_empty_execute_response(calls):
                steps.append(calls)
        decoded.append(steps)
    prompt = copy.deepcopy(entry)
    prompt.pop("function", None)
    verdict = multi_turn_checker(decoded, truth, prompt, entry["id"].rsplit("_", 1)[0], INSTANCE_NAME)
    return {
        "valid": bool(verdict.get("valid")),
        "error_type": verdict.get("error_type"),
        "error_message": verdict.get("error_message"),
        "decoded": decoded,
    }


def run(spec: TrialInput, on_step: Callable[[int], None]) -> Outcome:
    entry, truth = load_entry(spec.group, spec.task_id)
    handler = _handler(spec, on_step)
    scored_entry = copy.deepcopy(entry)  # inference extends entry["function"] with holdout functions
    # Exceptions (a model error) propagate: trial.py records them as this trial's failure, or has the
    # activity retried when the endpoint could not be reached.
    result, metadata = handler.inference_multi_turn_FC(entry, include_input_log=False, exclude_state_log=True)
    verdict = check(handler, scored_entry, truth, result)
    steps = sum(len(turn) for turn in result)
    prompt_tokens = int(sum(sum(turn) for turn in metadata.get("input_token_count", [])))
    completion_tokens = int(sum(sum(turn) for turn in metadata.get("output_token_count", [])))
    termination = "completed" if len(result) == len(truth) else "max_steps"
    return Outcome(
        reward=1.0 if verdict["valid"] else 0.0,
        termination=termination,
        steps=steps,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        trajectory={"result": result, "inference_log": metadata.get("inference_log"), "checker": verdict},
        detail=None if verdict["valid"] else f"{verdict['error_type']}: {verdict['error_message']}",
    )
