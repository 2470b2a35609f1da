"""LoRA runs: only adapter weights train, adapters are checkpointed (and merged on request), resumed, served."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file
from trainer_data import TINY, rollout_batch, transcript, write_jsonl

from mockworld_trainer.checkpoint import CheckpointStore
from mockworld_trainer.config import parse_model_spec
from mockworld_trainer.model import ByteTokenizer, load_model
from mockworld_trainer.serving.reload import PolicyHolder
from mockworld_trainer.trainer import Trainer

CPU = torch.device("cpu")
LORA = {**TINY, "lora": {"r": 4, "alpha": 8}}
CFG = {"lr": 1e-2, "micro_batch_size": 8}


def logits(model: torch.nn.Module) -> torch.Tensor:
    ids = torch.tensor([ByteTokenizer().encode(transcript("Rolled back.")).input_ids])  # (1, T)
    with torch.no_grad():
        return model(input_ids=ids).logits  # (1, T, V)


@pytest.mark.parametrize("kind", ["grpo", "sft"])
def test_a_lora_step_changes_only_adapter_weights(trainer: Trainer, tmp_path, kind: str) -> None:
    records = rollout_batch() if kind == "grpo" else [{"messages": r["messages"]} for r in rollout_batch()]
    batch_ref = write_jsonl(tmp_path / "batch.jsonl", records)
    base = load_model(parse_model_spec(TINY), None, CPU).state_dict()
    result = trainer.train_step("lora-1", 1, batch_ref, kind=kind, model=LORA, config=CFG)
    model = trainer._state.policy.model
    trained = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trained and all(".lora_A." in n or ".lora_B." in n for n in trained)
    changed, unchanged = 0, 0
    for name, value in model.state_dict().items():
        if ".lora_" in name:
            changed += int(not torch.equal(value, torch.zeros_like(value))) if ".lora_B." in name else 0
            continue
        # peft names a wrapped Linear's own weight "...q_proj.base_layer.weight"
        plain = name.removeprefix("base_model.model.").replace(".base_layer.", ".")
        assert torch.equal(value, base[plain]), f"{plain} changed"
        unchanged += 1
    assert changed > 0 and unchanged == len(base)
    # Checkpointed as adapters only (no merge asked): model_path is the adapter directory.
    step_dir = trainer.store.step_dir("lora-1", 1)
    assert result["adapter_path"] == result["model_path"] == str(step_dir / "adapter")
    assert (step_dir / "adapter" / "adapter_config.json").exists() and not (step_dir / "model").exists()
    saved = load_file(step_dir / "adapter" / "adapter_model.safetensors")
    assert saved and all("lora_" in k for k in saved)
    assert json.loads((step_dir / "adapter" / "adapter_config.json").read_text())["r"] == 4


def test_a_lora_run_resumes_from_its_adapters_and_optimizer_state(store: CheckpointStore, batch_ref: dict) -> None:
    straight = Trainer(CheckpointStore(store.root / "a"), device=CPU)
    for n in (1, 2):
        straight.train_step("r", n, batch_ref, model=LORA, config=CFG)
    resumed_store = CheckpointStore(store.root / "b")
    Trainer(resumed_store, device=CPU).train_step("r", 1, batch_ref, model=LORA, config=CFG)
    resumed = Trainer(resumed_store, device=CPU)  # a new process: loads base + step-1 adapters + AdamW state
    resumed.train_step("r", 2, batch_ref, model=LORA, config=CFG)
    a = load_file(straight.store.step_dir("r", 2) / "adapter" / "adapter_model.safetensors")
    b = load_file(resumed_store.step_dir("r", 2) / "adapter" / "adapter_model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_merge_saves_full_weights_and_the_policy_server_serves_the_adapters(trainer: Trainer, tmp_path) -> None:
    ref = write_jsonl(tmp_path / "b.jsonl", rollout_batch())
    spec = {**TINY, "lora": {"r": 4, "alpha": 8, "merge": True}}
    result = trainer.train_step("merged", 1, ref, model=spec, config=CFG)
    expected = logits(trainer._state.policy.model)
    assert result["model_path"].endswith("/model") and result["adapter_path"].endswith("/adapter")
    full = load_model(parse_model_spec(TINY), result["model_path"], CPU)
    assert torch.allclose(logits(full), expected, atol=1e-5)

    adapters_only = {**TINY, "lora": {"r": 4, "alpha": 8}}
    trainer.train_step("plain", 1, ref, model=adapters_only, config=CFG)
    served = PolicyHolder(trainer.store, "plain", None, CPU).served  # base + adapters, merged in
    assert served.step == 1 and served.model_path.endswith("/adapter")
    assert torch.allclose(logits(served.policy.model), logits(trainer._state.policy.model), atol=1e-5)
    assert trainer.latest_policy("plain")["adapter_path"] == served.model_path
