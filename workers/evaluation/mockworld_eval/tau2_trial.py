"""One tau2-bench trial through tau2's own code: `run.run_task` (the official orchestrator with the
LLM agent and the LLM user simulator) and `evaluate_simulation` (inside run_task).

run_task, not tau2's batch entry points: those prompt on stdin when a results file exists and write
into the package directory. `LITELLM_LOCAL_MODEL_COST_MAP=True` must be set before litellm is
imported (trial.py does), or litellm fetches its price map over the network at import.
"""

from __future__ import annotations

import random
from typing import Callable

from .bfcl_trial import trial_headers
from .contract import TAU2_DOMAINS, Sampling, TrialInput
from .outcome import InputError, Outcome, endpoint_key


def load_task(domain: str, split: str, task_id: str):
    from tau2.run import get_tasks

    if domain not in TAU2_DOMAINS:
        raise InputError(f"tau2 domain {domain!r} is not one of {', '.join(TAU2_DOMAINS)}")
    try:
        return get_tasks(domain, task_split_name=split, task_ids=[task_id])[0]
    except ValueError as error:
        raise InputError(f"tau2 {domain} split {split!r} has no task {task_id!r}: {error}") from error


def task_ids(domain: str, split: str) -> list[str]:
    from tau2.run import get_tasks

    if domain not in TAU2_DOMAINS:
        raise InputError(f"tau2 domain {domain!r} is not one of {', '.join(TAU2_DOMAINS)}")
    return [task.id for task in get_tasks(domain, task_split_name=split)]


def trial_seed(seed: int, trials: int, trial: int) -> int:
    """The seed tau2's run_tasks gives trial `trial` of `trials` (it seeds `random` with the run's
    seed and draws one integer per trial), so trial i here samples as trial i there."""
    draw = random.Random(seed)
    return [draw.randint(0, 1_000_000) for _ in range(trials)][trial]


def _llm_args(spec: TrialInput, sampling: Sampling, endpoint, role: str) -> dict:
    base_url, api_key = endpoint_key(endpoint)
    args = {
        "api_base": base_url,
        "api_key": api_key,
        "temperature": sampling.temperature,
        "extra_headers": trial_headers(spec, role),
        # No model call waits longer than the whole trial may run (litellm's default: 6,000 s).
        "timeout": float(spec.wall_seconds),
    }
    if sampling.top_p is not None:
        args["top_p"] = sampling.top_p
    if sampling.max_tokens is not None:
        args["max_tokens"] = sampling.max_tokens
    return args


def _count_steps(on_step: Callable[[int], None]) -> None:
    """Reports each model call (agent and user) as a step, through litellm's callback interface."""
    import litellm
    from litellm.integrations.custom_logger import CustomLogger

    class StepCounter(CustomLogger):
        calls = 0

        def log_pre_api_call(self, model, messages, kwargs):
            StepCounter.calls += 1
            on_step(StepCounter.calls)

    litellm.callbacks = [StepCounter()]


def run(spec: TrialInput, on_step: Callable[[int], None]) -> Outcome:
    from tau2.evaluator.evaluator import EvaluationType
    from tau2.run import run_task
    from tau2.utils.llm_utils import get_token_usage

    if spec.user is None:
        raise InputError("a tau2 trial needs a user-simulator endpoint (`user`)")
    if spec.trial >= spec.trials:
        raise InputError(f"trial {spec.trial} of a run with {spec.trials} trials per task")
    task = load_task(spec.group, spec.split, spec.task_id)
    _count_steps(on_step)
    simulation = run_task(
        domain=spec.group,
        task=task,
        agent="llm_agent",
        user="user_simulator",
        llm_agent=f"openai/{spec.policy.model}",
        llm_args_agent=_llm_args(spec, spec.sampling, spec.policy, "policy"),
        llm_user=f"openai/{spec.user.model}",
        llm_args_user=_llm_args(spec, spec.user_sampling, spec.user, "user-simulator"),
        max_steps=spec.max_steps,
        max_errors=spec.max_errors,
        evaluation_type=EvaluationType.ALL,
        seed=trial_seed(spec.seed, spec.trials, spec.trial),
    )
    usage = get_token_usage(simulation.messages)
    reward_info = simulation.reward_info
    reward = float(reward_info.reward) if reward_info is not None else 0.0
    note = (reward_info.info or {}).get("note") if reward_info is not None else None
    return Outcome(
        reward=reward,
        termination=str(getattr(simulation.termination_reason, "value", simulation.termination_reason)),
        steps=sum(1 for m in simulation.messages if getattr(m, "role", None) in ("assistant", "user")),
        prompt_tokens=int(usage["prompt_tokens"]),
        completion_tokens=int(usage["completion_tokens"]),
        trajectory=simulation.model_dump(mode="json"),
        detail=None if reward >= 1 else (note or "reward below 1 (see reward_info in the trajectory)"),
    )
