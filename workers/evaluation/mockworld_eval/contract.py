"""What the TypeScript workflows send this worker and what it answers (schemas/evaluation-contract.ts
is the same contract in zod; the end-to-end test in test/integration/evaluation.test.ts holds them
together). Inputs are validated here so that a malformed one fails non-retryably, naming each field."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

# Activity names, as the workflows call them on MOCKWORLD_EVAL_TASK_QUEUE.
RUN_TRIAL = "eval.runTrial"
LIST_TASKS = "eval.listTasks"
SUMMARIZE = "eval.summarize"

Benchmark = Literal["bfcl", "tau2"]

# BFCL-V4 multi-turn categories and tau2-bench domains this worker runs (the seed's anchors).
BFCL_CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
TAU2_DOMAINS = ("airline", "retail", "telecom")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Endpoint(_Strict):
    """An OpenAI-compatible endpoint. The key is read on the worker from the variable `apiKeyEnv` names."""

    base_url: str = Field(alias="baseUrl", min_length=1)
    model: str = Field(min_length=1)
    api_key_env: Optional[str] = Field(default=None, alias="apiKeyEnv", pattern=r"^[A-Z_][A-Z0-9_]*$")


class Sampling(_Strict):
    temperature: float = Field(default=0.0, ge=0, le=2)
    top_p: Optional[float] = Field(default=None, alias="topP", gt=0, le=1)
    max_tokens: Optional[int] = Field(default=None, alias="maxTokens", ge=1)


class TrialInput(_Strict):
    """One (benchmark, category or domain, task, trial) of an evaluation run."""

    evaluation_id: str = Field(alias="evaluationId", min_length=1)
    benchmark: Benchmark
    # BFCL: the category (multi_turn_base, ...); tau2: the domain (airline, retail, telecom).
    group: str = Field(min_length=1)
    task_id: str = Field(alias="taskId", min_length=1)
    trial: int = Field(ge=0)
    policy: Endpoint
    sampling: Sampling = Sampling()
    # tau2 only: the user simulator (it must support tool calling: the telecom user has tools).
    user: Optional[Endpoint] = None
    user_sampling: Sampling = Field(default=Sampling(), alias="userSampling")
    # tau2 only: the task split (base: airline 50, retail 114, telecom 114), step and error limits, seed.
    split: str = "base"
    max_steps: int = Field(default=200, alias="maxSteps", ge=1)
    max_errors: int = Field(default=10, alias="maxErrors", ge=1)
    seed: int = 300
    trials: int = Field(default=1, ge=1, description="trials per task of the run: tau2 derives trial seeds from it")


class TrialSummary(_Strict):
    """What runTrial returns (the trajectory stays in PostgreSQL)."""

    evaluation_id: str = Field(alias="evaluationId")
    benchmark: Benchmark
    group: str
    task_id: str = Field(alias="taskId")
    trial: int
    reward: float
    termination: str
    steps: int
    prompt_tokens: int = Field(alias="promptTokens")
    completion_tokens: int = Field(alias="completionTokens")
    failure: Optional[str] = None
    # True when the stored row was returned without running (a retried or repeated activity).
    stored: bool = False


class ListTasksInput(_Strict):
    benchmark: Benchmark
    group: str
    split: str = "base"
    task_ids: Optional[list[str]] = Field(default=None, alias="taskIds")
    limit: Optional[int] = Field(default=None, ge=1)


class SummarizeInput(_Strict):
    evaluation_id: str = Field(alias="evaluationId", min_length=1)
    # An evaluation of another policy on the same tasks, for the paired comparison.
    compare_with: Optional[str] = Field(default=None, alias="compareWith")
    bootstrap_samples: int = Field(default=2000, alias="bootstrapSamples", ge=100, le=100_000)
    confidence: float = Field(default=0.95, gt=0, lt=1)
    seed: int = 0


def dump(model: BaseModel) -> dict:
    """The camelCase JSON the TypeScript side reads."""
    return model.model_dump(by_alias=True, mode="json")
