"""A GGUF base (the embedded model's format) trains and serves like a pretrained directory.

The test writes its own tiny GGUF file (llama architecture, a byte-level BPE vocabulary and a ChatML
chat template, the layout of the embedded SmolLM2 file) with the ``gguf`` package, so it needs no
download; the same code path reads the real 135M file in bench/learning.ts.
"""

from __future__ import annotations

import json
import urllib.request

import numpy as np
import pytest
import torch
from gguf import GGUFWriter, TokenType
from temporalio.testing import ActivityEnvironment
from transformers.convert_slow_tokenizer import bytes_to_unicode

from mockworld_trainer import gguf
from mockworld_trainer.activities import TrainerActivities
from mockworld_trainer.config import PretrainedModelSpec, parse_model_spec
from mockworld_trainer.serving.app import PolicyServer
from trainer_data import CHAT_TEMPLATE, rollout_batch, write_jsonl

HIDDEN, FFN, HEADS, KV_HEADS, LAYERS = 16, 32, 2, 1, 1


def write_tiny_gguf(path) -> None:
    """A random 1-layer llama in GGUF: byte-level BPE (256 byte tokens, one merge) + ChatML specials."""
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tokens = specials + [bytes_to_unicode()[b] for b in range(256)] + ["\u0120t"]  # " t", the one merge
    rng = np.random.default_rng(0)
    head_dim = HIDDEN // HEADS
    writer = GGUFWriter(str(path), "llama")
    writer.add_block_count(LAYERS)
    writer.add_context_length(256)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([TokenType.CONTROL] * len(specials) + [TokenType.NORMAL] * 257)
    writer.add_token_merges(["\u0120 t"])
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_pad_token_id(2)
    writer.add_chat_template(CHAT_TEMPLATE)

    def weight(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    writer.add_tensor("token_embd.weight", weight(len(tokens), HIDDEN))
    writer.add_tensor("output_norm.weight", np.ones(HIDDEN, dtype=np.float32))
    for i in range(LAYERS):
        writer.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(HIDDEN, dtype=np.float32))
        writer.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(HIDDEN, dtype=np.float32))
        writer.add_tensor(f"blk.{i}.attn_q.weight", weight(HIDDEN, HIDDEN))
        writer.add_tensor(f"blk.{i}.attn_k.weight", weight(KV_HEADS * head_dim, HIDDEN))
        writer.add_tensor(f"blk.{i}.attn_v.weight", weight(KV_HEADS * head_dim, HIDDEN))
        writer.add_tensor(f"blk.{i}.attn_output.weight", weight(HIDDEN, HIDDEN))
        writer.add_tensor(f"blk.{i}.ffn_gate.weight", weight(FFN, HIDDEN))
        writer.add_tensor(f"blk.{i}.ffn_up.weight", weight(FFN, HIDDEN))
        writer.add_tensor(f"blk.{i}.ffn_down.weight", weight(HIDDEN, FFN))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.fixture
def gguf_file(tmp_path, monkeypatch):
    monkeypatch.setenv("MOCKWORLD_HOME", str(tmp_path / "home"))
    path = tmp_path / "tiny.gguf"
    write_tiny_gguf(path)
    return path


def test_a_gguf_base_is_dequantized_once_into_a_cached_pretrained_directory(gguf_file):
    spec = parse_model_spec({"kind": "gguf", "path": str(gguf_file)})
    assert isinstance(spec, PretrainedModelSpec) and spec.dtype == "float32"
    assert spec.path.startswith(str(gguf.cache_root()))
    config = json.loads((gguf.cache_root() / spec.path.rsplit("/", 1)[1] / "config.json").read_text())
    assert config["num_hidden_layers"] == LAYERS and config["hidden_size"] == HIDDEN
    stamp = (gguf.cache_root() / spec.path.rsplit("/", 1)[1] / "config.json").stat().st_mtime_ns
    # the cached directory is the same model the GGUF file is: same logits
    from transformers import AutoModelForCausalLM

    ids = torch.tensor([[1, 72, 105, 2]])
    direct = AutoModelForCausalLM.from_pretrained(str(gguf_file.parent), gguf_file=gguf_file.name, dtype=torch.float32)
    cached = AutoModelForCausalLM.from_pretrained(spec.path, local_files_only=True, dtype=torch.float32)
    assert torch.equal(direct(ids).logits, cached(ids).logits)
    again = parse_model_spec({"kind": "gguf", "path": str(gguf_file)})
    assert again == spec  # same file, same directory, not converted again
    assert (gguf.cache_root() / spec.path.rsplit("/", 1)[1] / "config.json").stat().st_mtime_ns == stamp


def test_a_missing_or_unreadable_gguf_file_is_a_bad_request(tmp_path, monkeypatch):
    from mockworld_trainer.errors import BadRequestError

    monkeypatch.setenv("MOCKWORLD_HOME", str(tmp_path / "home"))
    with pytest.raises(BadRequestError, match="is not a file"):
        parse_model_spec({"kind": "gguf", "path": str(tmp_path / "absent.gguf")})
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf file")
    with pytest.raises(BadRequestError, match="cannot read"):
        parse_model_spec({"kind": "gguf", "path": str(junk)})
    assert not [p for p in gguf.cache_root().iterdir() if p.name.startswith(".")]  # no temporary left


@pytest.mark.parametrize("lora", [None, {"r": 4, "target_modules": ["q_proj", "v_proj"]}], ids=["full", "lora"])
def test_a_grpo_step_on_a_gguf_base_is_saved_and_served(gguf_file, trainer, tmp_path, lora):
    env = ActivityEnvironment()
    acts = TrainerActivities(trainer)
    model = {"kind": "gguf", "path": str(gguf_file), **({"lora": lora} if lora else {})}
    env.run(acts.register_run, {"run_id": "wf-gguf", "model": model})
    ref = write_jsonl(tmp_path / "b.jsonl", rollout_batch())
    out = env.run(acts.grpo_step, {"run_id": "wf-gguf", "step": 1, "batch_ref": ref, "model": model})
    assert out["step"] == 1 and out["metrics"]["num_tokens"] > 0
    assert (out["adapter_path"] is not None) == bool(lora)  # a LoRA run checkpoints its adapters
    base = parse_model_spec(model)
    trained = trainer.store.weights_dir("wf-gguf", 1)
    server = PolicyServer("wf-gguf", base=base, store=trainer.store, device=torch.device("cpu"), port=0).start()
    try:
        body = {"model": "policy", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "seed": 0}
        request = urllib.request.Request(
            f"{server.url}/chat/completions", json.dumps(body).encode(), {"content-type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.headers["x-policy-version"] == "1"
            assert json.loads(response.read())["choices"][0]["message"]["role"] == "assistant"
    finally:
        server.close()
    assert (trained / "config.json").exists() or (trained / "adapter_config.json").exists()
