"""Tokens/s and peak memory per GPU of a GRPO trainer step on a real model (or the tiny CPU model).

    # one GPU (or CPU):
    .venv-trainer/bin/python bench/trainer-step.py --model /models/Qwen3-0.6B
    # a trainer group: FSDP2 over 8 GPUs of one node
    .venv-trainer/bin/torchrun --standalone --nproc-per-node 8 bench/trainer-step.py --model /models/Qwen3-8B
    # the CPU figures of the README
    .venv-trainer/bin/python bench/trainer-step.py --model tiny --response-tokens 512

--model: a local Hugging Face directory (default $MOCKWORLD_BENCH_MODEL, else ~/models/Qwen3-0.6B; nothing
is downloaded), or `tiny`. The batch is synthetic: --groups groups of --rollouts transcripts, each a
system and user turn and an assistant answer of about --response-tokens tokens (lengths varied by
+-50 % so that packing has something to pack), rewards alternating within a group. Step 1 loads the
model and is a warm-up; steps 2..--steps are measured, through the trainer's own step (so what is
printed is what a GRPO run's metrics report: tokens_per_s, peak_memory_bytes_per_rank).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from mockworld_trainer.checkpoint import CheckpointStore  # noqa: E402
from mockworld_trainer.group import GroupTrainer, in_group, join  # noqa: E402
from mockworld_trainer.trainer import Trainer  # noqa: E402

WORDS = "the service returns errors after the deploy so roll back restart scale check logs metrics".split()


def transcript(rng: random.Random, tokens: int) -> list[dict]:
    answer = " ".join(rng.choice(WORDS) for _ in range(max(1, tokens)))  # ~1 token per word (BPE), ~5 bytes (tiny)
    return [
        {"role": "system", "content": "You are an SRE agent."},
        {"role": "user", "content": "Checkout returns 500s since the last deploy. Fix it."},
        {"role": "assistant", "content": answer},
    ]


def batch(path: Path, groups: int, rollouts: int, tokens: int, tiny: bool, seed: int) -> dict:
    rng = random.Random(seed)
    per_token = 5 if tiny else 1  # the tiny model's tokens are bytes
    with open(path, "w", encoding="utf-8") as f:
        for g in range(groups):
            for k in range(rollouts):
                n = int(tokens * rng.uniform(0.5, 1.5)) // per_token
                f.write(json.dumps({"group_id": f"g{g}", "reward": float(k % 2), "messages": transcript(rng, n)}) + "\n")
    return {"kind": "jsonl", "path": str(path)}


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
    args = parser.parse_args()

    tiny = args.model == "tiny"
    if not tiny and not (Path(args.model) / "config.json").exists():
        sys.exit(f"no model at {args.model}: pass --model DIR (a local transformers directory) or --model tiny")
    model = {"kind": "tiny", "hidden_size": 256, "num_layers": 4, "num_heads": 8, "num_kv_heads": 4,
             "intermediate_size": 1024} if tiny else {"kind": "pretrained", "path": args.model, "dtype": args.dtype}  # fmt: skip
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
    for step in range(1, args.steps + 1):
        ref = batch(work / f"step-{step}.jsonl", args.groups, args.rollouts, args.response_tokens, tiny, step)
        metrics = front.train_step(run, step, ref, model=model, config=config)["metrics"]
        print(json.dumps({"step": step, "warm_up": step == 1, **{k: metrics.get(k) for k in (
            "duration_s", "tokens_per_s", "padding_fraction", "peak_memory_bytes_per_rank", "num_tokens", "world_size")}}))  # fmt: skip
        if step > 1:
            measured.append(metrics)
    if measured:
        peak = max(max(m["peak_memory_bytes_per_rank"]) for m in measured)
        print(
            f"model {args.model} device {trainer.device} ranks {measured[0]['world_size']}: "
            f"{statistics.fmean(m['tokens_per_s'] for m in measured):,.0f} tokens/s, "
            f"peak memory {peak / 2**30:.2f} GiB per rank (max over ranks), "
            f"padding {statistics.fmean(m['padding_fraction'] for m in measured):.0%}"
        )
    if group:
        front.close()  # type: ignore[union-attr]


if __name__ == "__main__":
    main()
