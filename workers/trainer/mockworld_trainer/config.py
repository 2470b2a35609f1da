"""Model specs and per-step hyper-parameters, validated at the activity boundary.

Defaults follow the seed paper (Mock Worlds, Real Skills, App. A "Training"): GRPO in VERL, PPO
mini-batch of 16 prompts, clipping ratio between 0.2 and 0.28, no SFT phase. Values the paper does
not state (learning rate, weight decay, gradient clipping) take VERL's actor defaults and say so.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import BadRequestError

DTYPES = ("float32", "bfloat16")


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class TinyModelSpec:
    """A randomly initialized Qwen3-architecture model built in code, with the byte tokenizer of model.py."""

    kind: Literal["tiny"] = "tiny"
    seed: int = field(default=0, metadata=_help("torch seed for the random initialization; same seed, same weights."))
    hidden_size: int = field(default=32, metadata=_help("Width of the residual stream."))
    num_layers: int = field(default=2, metadata=_help("Number of decoder layers."))
    num_heads: int = field(default=4, metadata=_help("Attention heads; must divide hidden_size."))
    num_kv_heads: int = field(default=2, metadata=_help("Key/value heads (GQA); must divide num_heads."))
    intermediate_size: int = field(default=64, metadata=_help("MLP width."))


@dataclass(frozen=True)
class PretrainedModelSpec:
    """A causal LM saved with ``save_pretrained`` in a local directory (weights, config, tokenizer, chat template)."""

    kind: Literal["pretrained"] = "pretrained"
    path: str = field(default="", metadata=_help("Local directory; the hub is never contacted."))
    dtype: str = field(default="float32", metadata=_help("Parameter dtype: float32 (default) or bfloat16."))


ModelSpec = TinyModelSpec | PretrainedModelSpec


@dataclass(frozen=True)
class StepConfig:
    """Hyper-parameters of one trainer step (GRPO or SFT); recorded with the step."""

    lr: float = field(default=1e-6, metadata=_help("AdamW learning rate (VERL actor default; the paper states none)."))
    weight_decay: float = field(default=0.01, metadata=_help("AdamW weight decay (VERL actor default)."))
    max_grad_norm: float = field(default=1.0, metadata=_help("Global gradient-norm clip per update (VERL default)."))
    eps_low: float = field(default=0.2, metadata=_help("Lower clip: ratio >= 1 - eps_low (paper App. A: 0.2)."))
    eps_high: float = field(default=0.28, metadata=_help("Upper clip: ratio <= 1 + eps_high (paper App. A: 0.28)."))
    kl_coef: float = field(default=0.0, metadata=_help("Weight of the k3 KL to the step-0 policy; 0 turns it off."))
    adv_eps: float = field(
        default=1e-6,
        metadata=_help("Added to the group std; a group whose std is below it has zero variance and zero advantage."),
    )
    mini_batch_groups: int = field(
        default=16,
        metadata=_help("Groups (prompts) per optimizer update; a step makes ceil(groups / this) updates (paper: 16)."),
    )
    micro_batch_size: int = field(default=4, metadata=_help("Sequences per forward/backward (gradient accumulation)."))
    max_seq_len: int = field(
        default=16384, metadata=_help("Tokens per transcript; longer ones are cut on the right and counted.")
    )


def _build(cls: type, data: Any, where: str, errors: list[str]) -> Any:
    """Builds a frozen dataclass from a dict, collecting every unknown key and wrongly typed value."""
    if not isinstance(data, dict):
        errors.append(f"{where}: expected an object")
        return None
    names = {f.name: f for f in dataclasses.fields(cls)}
    for key in data:
        if key not in names:
            errors.append(f"{where}.{key}: unknown field (valid: {', '.join(sorted(names))})")
    values: dict[str, Any] = {}
    for name, f in names.items():
        if name not in data:
            continue
        value = data[name]
        expected = type(f.default)
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if type(value) is not expected or (expected is float and not math.isfinite(value)):
            errors.append(f"{where}.{name}: expected a finite {expected.__name__}, got {value!r}")
            continue
        values[name] = value
    return cls(**values)


def parse_model_spec(data: Any, where: str = "model") -> ModelSpec:
    """Parses ``{"kind": "tiny", ...}`` or ``{"kind": "pretrained", "path": ...}``.

    Raises BadRequestError naming every bad path.
    """
    errors: list[str] = []
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind == "tiny":
        spec = _build(TinyModelSpec, data, where, errors)
        if spec and not errors:
            if min(spec.hidden_size, spec.num_layers, spec.num_heads, spec.num_kv_heads, spec.intermediate_size) < 1:
                errors.append(f"{where}: sizes must be positive")
            elif spec.hidden_size % spec.num_heads or spec.num_heads % spec.num_kv_heads:
                errors.append(f"{where}: num_heads must divide hidden_size and num_kv_heads must divide num_heads")
    elif kind == "pretrained":
        spec = _build(PretrainedModelSpec, data, where, errors)
        if spec and not errors:
            if not spec.path:
                errors.append(f"{where}.path: required for kind 'pretrained'")
            if spec.dtype not in DTYPES:
                errors.append(f"{where}.dtype: expected one of {', '.join(DTYPES)}, got {spec.dtype!r}")
    else:
        errors.append(f"{where}.kind: expected 'tiny' or 'pretrained', got {kind!r}")
        spec = None
    if errors:
        raise BadRequestError("invalid model spec:\n  " + "\n  ".join(errors))
    return spec


def parse_step_config(data: Any, where: str = "config") -> StepConfig:
    """Parses the optional ``config`` object of a step; cross-field checks live here and say what to change."""
    errors: list[str] = []
    cfg = _build(StepConfig, {} if data is None else data, where, errors)
    if cfg is not None and not errors:
        if cfg.lr <= 0:
            errors.append(f"{where}.lr: must be > 0")
        if not (0 <= cfg.eps_low < 1):
            errors.append(f"{where}.eps_low: must be in [0, 1) so that 1 - eps_low stays positive")
        if cfg.eps_high < 0:
            errors.append(f"{where}.eps_high: must be >= 0")
        if cfg.kl_coef < 0:
            errors.append(f"{where}.kl_coef: must be >= 0 (0 turns the KL term off)")
        if cfg.adv_eps <= 0:
            errors.append(f"{where}.adv_eps: must be > 0")
        if cfg.max_grad_norm <= 0:
            errors.append(f"{where}.max_grad_norm: must be > 0")
        for name in ("mini_batch_groups", "micro_batch_size"):
            if getattr(cfg, name) < 1:
                errors.append(f"{where}.{name}: must be >= 1")
        if cfg.max_seq_len < 2:
            errors.append(f"{where}.max_seq_len: must be >= 2 (one prediction needs two tokens)")
    if errors:
        raise BadRequestError("invalid step config:\n  " + "\n  ".join(errors))
    return cfg


def to_dict(obj: Any) -> dict[str, Any]:
    """Plain-JSON form of a spec or config, as recorded in checkpoints."""
    return dataclasses.asdict(obj)
