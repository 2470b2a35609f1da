"""bench/trainer-step.py --model shape:NAME (a random model of a real shape, built offline) and
bench/capacity.py's parameter count, which the GPU check (bench/gpu-check.sh) compares against."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from mockworld_trainer.model import ChatTemplateTokenizer

BENCH = Path(__file__).resolve().parents[3] / "bench"


def _bench():
    spec = importlib.util.spec_from_file_location("trainer_step_bench", BENCH / "trainer-step.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_qwen3_0_6b_shape_is_the_published_one():
    bench = _bench()
    arch = bench.capacity.arch("qwen3-0.6b")
    assert (arch.hidden, arch.layers, arch.heads, arch.kv_heads, arch.head_dim, arch.intermediate, arch.vocab, arch.tied) == (
        1024, 28, 16, 8, 128, 3072, 151936, True,
    )  # fmt: skip
    assert round(arch.params() / 1e9, 3) == 0.596  # Qwen3-0.6B: 0.6B with 0.44B non-embedding


def test_shape_model_matches_capacity_count_and_tokenizes_one_token_per_word(tmp_path):
    bench = _bench()
    # head_dim != hidden / heads and a tied embedding, as in Qwen3-0.6B; small enough for the CPU
    arch = bench.capacity.arch(
        "qwen3-0.6b", ["layers=2", "hidden=64", "intermediate=96", "vocab=512", "heads=4", "kv_heads=2", "head_dim=32"]
    )
    path = bench.build_shape(arch, "float32", tmp_path)
    assert bench.build_shape(arch, "float32", tmp_path) == path  # built once, then reused
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, local_files_only=True)
    assert sum(p.numel() for p in model.parameters()) == arch.params()
    assert model.config.head_dim == 32 and model.config.tie_word_embeddings

    tok = ChatTemplateTokenizer(AutoTokenizer.from_pretrained(path, local_files_only=True))
    words = 37
    encoded = tok.encode(bench.transcript(__import__("random").Random(0), words))
    assert sum(encoded.loss_mask) == words + 1  # the answer's words and <|im_end|>
    ref = bench.batch(tmp_path / "b.jsonl", 1, 2, words, False, 1, spread=0.0)
    model_spec = {"kind": "pretrained", "path": str(path), "dtype": "float32"}
    assert bench.longest_transcript(model_spec, ref) == len(encoded.input_ids)
