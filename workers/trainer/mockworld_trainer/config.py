"""Model specs and per-step hyper-parameters as typed objects, built from validated contract data.

Their fields, ranges, defaults and meaning are defined once, in the contract (schemas/trainer-model.ts
and schemas/trainer-step.ts, read here through contract.py); these dataclasses only carry the
validated values, with every default filled in, so that what a step records is complete.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from . import contract


@dataclass(frozen=True)
class LoraSpec:
    """LoRA adapters (peft) on ``target_modules``; the base weights stay frozen (contract: trainer-model.ts)."""

    r: int
    alpha: float
    dropout: float
    target_modules: tuple[str, ...]
    merge: bool


@dataclass(frozen=True)
class TinyModelSpec:
    """A randomly initialized Qwen3-architecture model built in code, with the byte tokenizer of model.py."""

    kind: Literal["tiny"]
    seed: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    intermediate_size: int
    lora: LoraSpec | None = None


@dataclass(frozen=True)
class PretrainedModelSpec:
    """A causal LM saved with ``save_pretrained`` in a local directory (weights, config, tokenizer, chat template)."""

    kind: Literal["pretrained"]
    path: str
    dtype: str
    lora: LoraSpec | None = None


ModelSpec = TinyModelSpec | PretrainedModelSpec


@dataclass(frozen=True)
class StepConfig:
    """Hyper-parameters of one trainer step (GRPO or SFT); recorded with the step."""

    lr: float
    weight_decay: float
    max_grad_norm: float
    eps_low: float
    eps_high: float
    kl_coef: float
    adv_eps: float
    mini_batch_groups: int
    micro_batch_size: int
    pack_tokens: int
    max_seq_len: int
    temperature: float  # GRPO: the rollouts' sampling temperature; pi_old and pi_theta are softmax(logits / it)
    top_p: float  # GRPO: the rollouts' nucleus; SFT ignores both


def _typed(cls: type, values: dict[str, Any]) -> Any:
    """The dataclass of validated values; JSON integers become floats where the field is a float."""
    floats = {f.name for f in dataclasses.fields(cls) if f.type == "float"}
    out = {k: float(v) if k in floats else v for k, v in values.items()}
    if out.get("lora") is not None:
        lora = {**out["lora"], "target_modules": tuple(out["lora"]["target_modules"])}
        out["lora"] = _typed(LoraSpec, lora)
    return cls(**out)


def parse_model_spec(data: Any, where: str = "model") -> ModelSpec:
    """Parses ``{"kind": "tiny", ...}``, ``{"kind": "pretrained", "path": ...}`` or ``{"kind": "gguf", "path": ...}``;
    BadRequestError names every bad path.

    A gguf base is returned as the pretrained model it de-quantizes to (gguf.py: converted once per
    file, then cached), so everything downstream (checkpoints, LoRA, serving) has two kinds to handle.
    """
    values = contract.validate("model-spec", data, "model spec", where)
    if values["kind"] == "gguf":
        from .gguf import pretrained_dir

        values = {**values, "kind": "pretrained", "path": pretrained_dir(values["path"])}
    if values["kind"] == "pretrained":
        return _typed(PretrainedModelSpec, values)
    # The one rule of the contract that JSON Schema cannot state (zod's TinyModelSpecSchema has it too).
    if values["hidden_size"] % values["num_heads"] or values["num_heads"] % values["num_kv_heads"]:
        contract.raise_problems(
            "model spec", [f"{where}.num_heads: num_heads must divide hidden_size and num_kv_heads must divide num_heads"]
        )
    return _typed(TinyModelSpec, values)


def parse_step_config(data: Any, where: str = "config") -> StepConfig:
    """Parses the optional ``config`` object of a step (None: every default)."""
    return _typed(StepConfig, contract.validate("step-config", {} if data is None else data, "step config", where))


def to_dict(obj: Any) -> dict[str, Any]:
    """Plain-JSON form of a spec or config, as recorded in checkpoints. A model without LoRA has no
    ``lora`` key, so it records (and compares) exactly as before LoRA existed."""
    out = dataclasses.asdict(obj)
    if "lora" in out:
        if out["lora"] is None:
            del out["lora"]
        else:
            out["lora"]["target_modules"] = list(out["lora"]["target_modules"])
    return out
