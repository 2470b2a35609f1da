"""LoRA adapters with peft: the run's base weights stay frozen and only the adapters train.

A LoRA run (``lora`` in its model spec) checkpoints each step's adapters in peft's layout
(``step-N/adapter/``: adapter_config.json + adapter_model.safetensors), which vLLM and SGLang load by
name at run time, and, with ``merge``, the merged full weights too (``step-N/model/``). Step 0 is the
base model with fresh adapters: ``B = 0``, so the step-0 policy is exactly the base model, and ``A`` is
drawn from the spec's seed, so the same spec gives the same adapters on any node.
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import PreTrainedModel

from .config import LoraSpec, ModelSpec
from .model import load_model


def lora_config(spec: LoraSpec) -> LoraConfig:
    return LoraConfig(
        r=spec.r,
        lora_alpha=spec.alpha,
        lora_dropout=spec.dropout,
        target_modules=list(spec.target_modules),
        bias="none",
        task_type="CAUSAL_LM",
    )


def add_adapters(model: PreTrainedModel, spec: LoraSpec, seed: int) -> PeftModel:
    """Fresh trainable adapters on ``model`` (frozen), initialised from ``seed`` without touching global RNG."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return get_peft_model(model, lora_config(spec))


def load_adapters(model: PreTrainedModel, adapter_dir: str | Path, trainable: bool) -> PeftModel:
    """The adapters saved in ``adapter_dir`` on ``model`` (its base weights)."""
    return PeftModel.from_pretrained(model, str(adapter_dir), is_trainable=trainable)


def is_lora(model: torch.nn.Module) -> bool:
    return isinstance(model, PeftModel)


def save_adapters(model: PeftModel, directory: Path) -> None:
    """peft's layout: only the adapter weights and their config."""
    model.save_pretrained(directory)


def merged(model: PeftModel) -> PreTrainedModel:
    """A merged copy (base + B A scaled) for serving as full weights; the trained model is untouched.

    Costs one more copy of the weights in memory while it is saved.
    """
    return copy.deepcopy(model).merge_and_unload()


def adapter_parameter_names(model: torch.nn.Module) -> set[str]:
    """Names of the parameters LoRA trains (every other one must stay as the base)."""
    return {name for name, p in model.named_parameters() if p.requires_grad}


def load_policy_model(
    spec: ModelSpec,
    weights_dir: str | None,
    adapter_dir: str | None,
    device: torch.device,
    *,
    trainable: bool,
) -> torch.nn.Module:
    """The model of a run's step, on ``device``.

    Without LoRA: the step's full weights (``weights_dir``; None: the base). With LoRA: the base with
    the step's adapters (``adapter_dir``; None at step 0: fresh adapters, seeded by the spec), trainable
    for the trainer; for serving (``trainable=False``) the merged weights when saved (``weights_dir``),
    else the adapters merged in here, so generation runs on a plain model at full speed.
    """
    if spec.lora is None or (not trainable and weights_dir is not None):  # full or merged weights
        return load_model(spec, weights_dir, device)
    base = load_model(spec, None, device)
    if adapter_dir is None:
        model = add_adapters(base, spec.lora, getattr(spec, "seed", 0))
    else:
        model = load_adapters(base, adapter_dir, trainable)
    model = model.to(device)
    return model if trainable else model.merge_and_unload()
