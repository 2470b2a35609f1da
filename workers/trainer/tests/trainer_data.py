"""Test data shared by the trainer tests: a tiny model spec, rollout transcripts, JSONL batches."""

from __future__ import annotations

import json
from pathlib import Path

TINY = {
    "kind": "tiny",
    "seed": 0,
    "hidden_size": 32,
    "num_layers": 2,
    "num_heads": 4,
    "num_kv_heads": 2,
    "intermediate_size": 64,
}


def transcript(answer: str, user: str = "The checkout service returns 500s. Fix it?") -> list[dict]:
    """A short agentic transcript: system, user, a tool call, its result, the final answer."""
    return [
        {"role": "system", "content": "You are an SRE agent."},
        {"role": "user", "content": user},
        {
            "role": "assistant",
            "content": "Checking logs.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_logs", "arguments": '{"svc":"checkout"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "OOM after v2.1 deploy"},
        {"role": "assistant", "content": answer},
    ]


def rollout_batch(groups: int = 2, per_group: int = 4) -> list[dict]:
    """GRPO records: in each group, rollouts that roll back score 1, the others 0 (one all-equal group if asked)."""
    answers = ["Rolled back v2.1.", "Restarted it.", "Rolled back to v2.0.", "Scaled up."]
    out = []
    for g in range(groups):
        for k in range(per_group):
            answer = answers[k % len(answers)]
            out.append(
                {
                    "group_id": f"task-{g}",
                    "reward": 1.0 if "Rolled" in answer else 0.0,
                    "messages": transcript(answer, f"Task {g}: checkout 500s. Fix?"),
                }
            )
    return out


def write_jsonl(path: Path, records: list[dict]) -> dict:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return {"kind": "jsonl", "path": str(path)}


CHAT_TEMPLATE = (
    "{%- if tools %}{{- '<|im_start|>system\\n' + (tools | tojson) + '<|im_end|>\\n' }}{%- endif %}"
    "{%- for m in messages %}"
    "{{- '<|im_start|>' + m.role + '\\n' + (m.content or '') }}"
    "{%- for c in m.tool_calls or [] %}"
    "{{- '\\n<tool_call>' + c.function.name + ' ' + c.function.arguments + '</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def byte_level_hf_tokenizer():
    """A Hugging Face fast tokenizer built in code: byte-level, no merges, Qwen-style specials and chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", extra_special_tokens=["<|im_start|>"]
    )
    hf.chat_template = CHAT_TEMPLATE
    return hf


def make_pretrained_dir(path: Path) -> Path:
    """A 'pretrained' model directory as save_pretrained writes it: tiny random Qwen3 weights + the tokenizer above."""
    import torch
    from transformers import AutoModelForCausalLM

    from mockworld_trainer.config import parse_model_spec
    from mockworld_trainer.model import tiny_config

    hf = byte_level_hf_tokenizer()
    cfg = tiny_config(parse_model_spec({"kind": "tiny"}))
    cfg.vocab_size, cfg.eos_token_id, cfg.pad_token_id, cfg.bos_token_id = 264, hf.eos_token_id, hf.pad_token_id, None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1)
        model = AutoModelForCausalLM.from_config(cfg)
    model.save_pretrained(path)
    hf.save_pretrained(path)
    return path
