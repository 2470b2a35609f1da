"""Tokens/s and peak memory per GPU of a GRPO trainer step on a real model (or the tiny CPU model).

    # one GPU (or CPU):
    .venv-trainer/bin/python bench/trainer-step.py --model /models/Qwen3-0.6B
    # a trainer group: FSDP2 over 8 GPUs of one node
    .venv-trainer/bin/torchrun --standalone --nproc-per-node 8 bench/trainer-step.py --model /models/Qwen3-8B
    # the CPU figures of the README
    .venv-trainer/bin/python bench/trainer-step.py --model tiny --response-tokens 512
    # no weights at hand (a GPU machine without network): a random model of Qwen3-0.6B's shape
    python3 bench/trainer-step.py --model shape:qwen3-0.6b --response-tokens 13000 --spread 0

--model: a local Hugging Face directory (default $MOCKWORLD_BENCH_MODEL, else ~/models/Qwen3-0.6B; nothing
is downloaded), `tiny`, or `shape:NAME` (a shape of bench/capacity.py's ARCHS, fields changed with
--override layers=2): a randomly initialised transformers Qwen3 model of that shape and a word-level
tokenizer with a chat template (one token per word of the batch) are written once to
$MOCKWORLD_BENCH_SHAPES (default /tmp/mockworld-bench-shapes) and trained as a `pretrained` model,
so the step runs the real model's path (bf16 weights on a GPU, the chat-template tokenizer) with its
compute and memory, without downloading anything. The batch is synthetic: --groups groups of --rollouts transcripts, each a
system and user turn and an assistant answer of about --response-tokens tokens (lengths varied by
+- --spread, 50 % by default, so that packing has something to pack), rewards alternating within a
group. Step 1 loads the model and is a warm-up; steps 2..--steps are measured, through the trainer's
own step (so what is printed is what a GRPO run's metrics report: tokens_per_s,
peak_memory_bytes_per_rank). For a shape, the summary also gives bench/capacity.py's predicted peak for
the longest micro-batch; --json-out writes the summary as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from mockworld_trainer.checkpoint import CheckpointStore  # noqa: E402
from mockworld_trainer.group import GroupTrainer, in_group, join  # noqa: E402
from mockworld_trainer.trainer import Trainer  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import capacity  # noqa: E402  (bench/capacity.py: the shapes and the predicted peak)

WORDS = "the service returns errors after the deploy so roll back restart scale check logs metrics".split()
SYSTEM = "You are an SRE agent."
USER = "Checkout returns 500s since the last deploy. Fix it."
# The shape models' chat template (Qwen's turn markers); prefix-stable, as ChatTemplateTokenizer requires.
CHAT_TEMPLATE = (
    "{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}"
)


def transcript(rng: random.Random, tokens: int) -> list[dict]:
    answer = " ".join(rng.choice(WORDS) for _ in range(max(1, tokens)))  # ~1 token per word (BPE), ~5 bytes (tiny)
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": USER},
        {"role": "assistant", "content": answer},
    ]


def batch(path: Path, groups: int, rollouts: int, tokens: int, tiny: bool, seed: int, spread: float = 0.5) -> dict:
    rng = random.Random(seed)
    per_token = 5 if tiny else 1  # the tiny model's tokens are bytes
    with open(path, "w", encoding="utf-8") as f:
        for g in range(groups):
            for k in range(rollouts):
                n = int(tokens * rng.uniform(1 - spread, 1 + spread)) // per_token
                f.write(json.dumps({"group_id": f"g{g}", "reward": float(k % 2), "messages": transcript(rng, n)}) + "\n")
    return {"kind": "jsonl", "path": str(path)}


def build_shape(arch: capacity.Arch, dtype: str, root: Path) -> Path:
    """A saved random model of ``arch``'s shape and its tokenizer (see the module docstring), built once
    per shape and dtype under ``root``; local rank 0 builds, the other ranks of a node wait for it."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast, Qwen3Config

    slug = "".join(c if c.isalnum() or c in ".-" else "-" for c in arch.name.lower())
    out = root / f"{slug}-{dtype}"
    if (out / "config.json").exists():
        return out
    if int(os.environ.get("LOCAL_RANK", "0")) != 0:
        deadline = time.monotonic() + 1800
        while not (out / "config.json").exists():
            if time.monotonic() > deadline:
                sys.exit(f"local rank 0 did not build {out} in 30 min")
            time.sleep(1)
        return out
    specials = ["[UNK]", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    vocab = {t: i for i, t in enumerate(specials)}
    for w in WORDS + f"system user assistant tool {SYSTEM} {USER}".replace(".", " . ").split():
        vocab.setdefault(w, len(vocab))
    if len(vocab) > arch.vocab:
        sys.exit(f"vocab={arch.vocab} is smaller than the bench tokenizer's {len(vocab)} tokens")
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="<|endoftext|>", eos_token="<|im_end|>",
        additional_special_tokens=["<|im_start|>"],
    )  # fmt: skip
    hf_tok.chat_template = CHAT_TEMPLATE
    config = Qwen3Config(
        vocab_size=arch.vocab,
        hidden_size=arch.hidden,
        intermediate_size=arch.intermediate,
        num_hidden_layers=arch.layers,
        num_attention_heads=arch.heads,
        num_key_value_heads=arch.kv_heads,
        head_dim=arch.head_dim,
        max_position_embeddings=40960,
        rms_norm_eps=1e-6,
        tie_word_embeddings=arch.tied,
        bos_token_id=vocab["<|endoftext|>"],
        eos_token_id=vocab["<|im_end|>"],
        pad_token_id=vocab["<|endoftext|>"],
    )
    started = time.monotonic()
    with torch.random.fork_rng(devices=[]), torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    tmp = root / f".{slug}-{dtype}-{os.getpid()}"
    model.save_pretrained(tmp)
    hf_tok.save_pretrained(tmp)
    del model
    try:
        tmp.rename(out)
    except OSError:  # built by another process meanwhile
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    print(f"built {arch.name} ({arch.params() / 1e9:.3f}B params, random) at {out} in {time.monotonic() - started:.1f} s")
    return out


def longest_transcript(model: dict, ref: dict) -> int:
    """Tokens of the batch's longest transcript, as the trainer tokenizes it."""
    from mockworld_trainer.config import parse_model_spec
    from mockworld_trainer.model import load_tokenizer

    tokenizer = load_tokenizer(parse_model_spec(model))
    with open(ref["path"], encoding="utf-8") as f:
        return max(len(tokenizer.encode(json.loads(line)["messages"]).input_ids) for line in f if line.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description="GRPO trainer step throughput")
    parser.add_argument("--model", default=os.environ.get("MOCKWORLD_BENCH_MODEL", str(Path.home() / "models" / "Qwen3-0.6B")))
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    parser.add_argument("--groups", type=int, default=4)
    parser.add_argument("--rollouts", type=int, default=4)
    parser.add_argument("--response-tokens", type=int, default=4096)
    parser.add_argument("--micro-batch-size", type=int, default=1)
    parser.add_argument("--pack-tokens", type=int, default=0, help="pack transcripts into rows of this many tokens")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--spread", type=float, default=0.5, help="response lengths vary by +- this share (0: all equal)")
    parser.add_argument("--override", action="append", default=[], metavar="FIELD=INT",
                        help="with --model shape:NAME: change one field of the shape (layers=2, vocab=4096, ...)")  # fmt: skip
    parser.add_argument("--json-out", help="write the summary (measured steps, prediction) to this JSON file")
    args = parser.parse_args()
    if not 0 <= args.spread < 1:
        sys.exit("--spread must be in [0, 1)")

    tiny = args.model == "tiny"
    arch = None
    path = args.model
    if args.model.startswith("shape:"):
        arch = capacity.arch(args.model.removeprefix("shape:"), args.override)
        root = Path(os.environ.get("MOCKWORLD_BENCH_SHAPES", "/tmp/mockworld-bench-shapes"))
        root.mkdir(parents=True, exist_ok=True)
        path = str(build_shape(arch, args.dtype, root))
    elif args.override:
        sys.exit("--override needs --model shape:NAME")
    if not tiny and not (Path(path) / "config.json").exists():
        sys.exit(f"no model at {path}: pass --model DIR (a local transformers directory), tiny or shape:NAME")
    model = {"kind": "tiny", "hidden_size": 256, "num_layers": 4, "num_heads": 8, "num_kv_heads": 4,
             "intermediate_size": 1024} if tiny else {"kind": "pretrained", "path": path, "dtype": args.dtype}  # fmt: skip
    config = {"lr": 1e-6, "micro_batch_size": args.micro_batch_size, "pack_tokens": args.pack_tokens,
              "mini_batch_groups": args.groups, "max_seq_len": 32768}  # fmt: skip

    group = in_group()
    if group:
        ranks, device = join()
        trainer = Trainer(CheckpointStore(os.environ.get("MOCKWORLD_BENCH_DIR", "/tmp/mockworld-bench")), device=device, ranks=ranks)
        if ranks.rank != 0:
            from mockworld_trainer.group import follow

            follow(trainer)
            return
        front = GroupTrainer(trainer)
    else:
        trainer = Trainer(CheckpointStore(tempfile.mkdtemp(prefix="mockworld-bench-")))
        front = trainer
    work = Path(tempfile.mkdtemp(prefix="mockworld-bench-batch-"))
    run = f"bench-{os.getpid()}"
    measured = []
    longest = 0
    for step in range(1, args.steps + 1):
        ref = batch(work / f"step-{step}.jsonl", args.groups, args.rollouts, args.response_tokens, tiny, step, args.spread)
        longest = max(longest, longest_transcript(model, ref))
        metrics = front.train_step(run, step, ref, model=model, config=config)["metrics"]
        print(json.dumps({"step": step, "warm_up": step == 1, **{k: metrics.get(k) for k in (
            "duration_s", "tokens_per_s", "padding_fraction", "peak_memory_bytes_per_rank", "num_tokens", "world_size")}}))  # fmt: skip
        if step > 1:
            measured.append(metrics)
    if measured:
        peak = max(max(m["peak_memory_bytes_per_rank"]) for m in measured)
        world = measured[0]["world_size"]
        print(
            f"model {args.model} device {trainer.device} ranks {world}: "
            f"{statistics.fmean(m['tokens_per_s'] for m in measured):,.0f} tokens/s, "
            f"peak memory {peak / 2**30:.2f} GiB per rank (max over ranks), "
            f"padding {statistics.fmean(m['padding_fraction'] for m in measured):.0%}"
        )
        summary = {
            "model": args.model,
            "arch": None if arch is None else {**arch.__dict__, "params": arch.params()},
            "dtype": args.dtype,
            "device": str(trainer.device),
            "world_size": world,
            "activation_checkpointing": os.environ.get("MOCKWORLD_TRAINER_ACTIVATION_CHECKPOINTING")
            or ("default: on" if trainer.device.type == "cuda" else "default: off"),
            "args": vars(args),
            "longest_transcript_tokens": longest,
            "tokens_per_s": statistics.fmean(m["tokens_per_s"] for m in measured),
            "peak_memory_bytes": peak,
            "steps": measured,
            "prediction": None,
        }
        if arch is not None and args.dtype == "bfloat16":
            tokens = args.pack_tokens or args.micro_batch_size * longest  # a micro-batch is padded to its longest
            mode = "single-bf16" if world == 1 else "fsdp-full"
            pred = capacity.predict(arch, mode, world, tokens)
            summary["prediction"] = pred
            print(
                f"bench/capacity.py predicts {pred['predicted_peak_bytes'] / 2**30:.2f} GiB ({mode}, {tokens:,} tokens per "
                f"micro-batch: state {pred['state_bytes_per_gpu'] / 2**30:.2f} + activations "
                f"{pred['activation_bytes'] / 2**30:.2f}); measured {peak / 2**30:.2f} GiB"
                + ("" if trainer.device.type == "cuda" else " (CPU: peak RSS of the process, not comparable)")
            )
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    if group:
        front.close()  # type: ignore[union-attr]


if __name__ == "__main__":
    main()
