"""Trainer capacity from first principles: does a model train on a node, and how large a micro-batch?

    python3 bench/capacity.py            # the README's table (Qwen3-8B/14B on 8 x 96 GB and 8 x 141 GB)
    python3 bench/capacity.py --json     # the same rows as JSON
    python3 bench/capacity.py --arch qwen3-0.6b --tokens 13050 --mode single-bf16 --gpus 1
                                         # the predicted peak of one micro-batch (bench/gpu-check.sh)

No GPU needed: parameter counts come from the models' configurations (Qwen3-8B and Qwen3-14B as
published), memory from bytes per parameter for each way of training, activations from the shapes
of one decoder layer under activation checkpointing. It states its assumptions (ASSUMPTIONS) so a
measured figure (bench/trainer-step.py on a GPU) can be put next to it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from dataclasses import dataclass

GB = 1e9


@dataclass(frozen=True)
class Arch:
    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied: bool

    def layer_params(self) -> int:
        q = self.hidden * self.heads * self.head_dim
        kv = 2 * self.hidden * self.kv_heads * self.head_dim
        o = self.heads * self.head_dim * self.hidden
        mlp = 3 * self.hidden * self.intermediate  # gate, up, down
        norms = 2 * self.hidden + 2 * self.head_dim  # input/post-attention RMSNorm, q/k norm
        return q + kv + o + mlp + norms

    def params(self) -> int:
        embed = self.vocab * self.hidden
        return self.layers * self.layer_params() + embed * (1 if self.tied else 2) + self.hidden

    def lora_params(self, r: int) -> int:
        """LoRA on every attention and MLP projection: r * (in + out) per projection."""
        h, a, kv, i = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim, self.intermediate
        per_layer = r * ((h + a) + 2 * (h + kv) + (a + h) + 2 * (h + i) + (i + h))
        return self.layers * per_layer


# Published configurations (config.json of Qwen/Qwen3-8B and Qwen/Qwen3-14B).
MODELS = [
    Arch("Qwen3-8B", 4096, 36, 32, 8, 128, 12288, 151936, False),
    Arch("Qwen3-14B", 5120, 40, 40, 8, 128, 17408, 151936, False),
]
# Shapes by name, for --arch here and `--model shape:NAME` of bench/trainer-step.py (a random model of
# that shape, built offline). Qwen3-0.6B as published: head_dim 128 (not hidden / heads), tied embeddings.
ARCHS = {
    "qwen3-0.6b": Arch("Qwen3-0.6B", 1024, 28, 16, 8, 128, 3072, 151936, True),
    **{m.name.lower(): m for m in MODELS},
}
MODES = ("single-bf16", "fsdp-full", "fsdp-lora")
NODES = [("8 x 96 GB", 8, 96), ("8 x 141 GB", 8, 141)]
SEQ = 16384  # one transcript: up to 13,000 response tokens (seed App. A) + prompt and tool turns (the trainer's max_seq_len)
RESERVED_GB = 6.0  # CUDA context, NCCL buffers, allocator fragmentation, per GPU
LORA_R = 16

ASSUMPTIONS = [
    "fsdp-full: fp32 master weights + fp32 gradients + fp32 AdamW m and v = 16 B/param, sharded over the node "
    "(FSDP2), bf16 compute; plus two gathered bf16 layers (the one computing and the one prefetched)",
    "single-bf16: today's one-GPU path with dtype bfloat16: weights, gradients, m, v all bf16 = 8 B/param, unsharded",
    f"fsdp-lora: frozen bf16 base sharded (2 B/param / N) + LoRA r={LORA_R} on all projections at 16 B/param; "
    "what sharding would allow, not run yet: the trainer trains a LoRA run in one process and a group refuses one",
    "activations with activation checkpointing: each layer keeps its bf16 input (2 * hidden B/token); one layer is "
    "recomputed at a time: ~2 x (8 * hidden + 4 * intermediate) x 2 B/token for its tensors and their gradients "
    "(attention by SDPA/flash: no L x L scores); logits: bf16 + the fp32 row used for log-softmax + its gradient "
    "= 10 B per token and vocabulary entry",
    f"{RESERVED_GB:g} GB per GPU reserved (CUDA context, NCCL, fragmentation); transcripts of {SEQ} tokens",
]


def activation_bytes_per_token(m: Arch) -> float:
    checkpoints = m.layers * m.hidden * 2
    one_layer = 2 * (8 * m.hidden + 4 * m.intermediate) * 2
    logits = m.vocab * 10
    return checkpoints + one_layer + logits


def arch(name: str, overrides: list[str] | None = None) -> Arch:
    """The shape ``name`` (a key of ARCHS), with ``field=int`` overrides (e.g. ``layers=2``, ``vocab=4096``)."""
    if name.lower() not in ARCHS:
        raise SystemExit(f"unknown arch {name!r}; known: {', '.join(ARCHS)}")
    m = ARCHS[name.lower()]
    fields = {f.name for f in dataclasses.fields(Arch)} - {"name", "tied"}
    changes: dict[str, int] = {}
    for item in overrides or []:
        key, _, value = item.partition("=")
        if key not in fields or not value.isdigit():
            raise SystemExit(f"bad override {item!r}: expected FIELD=INT with FIELD one of {', '.join(sorted(fields))}")
        changes[key] = int(value)
    if changes:
        m = dataclasses.replace(m, name=m.name + "".join(f" {k}={v}" for k, v in sorted(changes.items())), **changes)
    return m


def state_bytes(m: Arch, mode: str, gpus: int) -> tuple[float, float]:
    """(training state, gathered layers) in bytes per GPU for ``mode`` over ``gpus`` GPUs (ASSUMPTIONS)."""
    p = m.params()
    gathered = 2 * m.layer_params() * 2  # two bf16 layers unsharded at a time
    if mode == "single-bf16":
        return 8 * p, 0.0
    if mode == "fsdp-full":
        return 16 * p / gpus, gathered
    if mode == "fsdp-lora":
        return 2 * p / gpus + 16 * m.lora_params(LORA_R), gathered
    raise SystemExit(f"unknown mode {mode!r}; known: {', '.join(MODES)}")


def predict(m: Arch, mode: str, gpus: int, tokens: int) -> dict:
    """The predicted peak of tensor memory on one GPU while a micro-batch of ``tokens`` tokens trains:
    what torch.cuda.max_memory_allocated measures, so without RESERVED_GB (context, NCCL, fragmentation)."""
    state, extra = state_bytes(m, mode, gpus)
    act = activation_bytes_per_token(m) * tokens
    return {
        "arch": m.name,
        "params": m.params(),
        "mode": mode,
        "gpus": gpus,
        "tokens_per_micro_batch": tokens,
        "state_bytes_per_gpu": int(state + extra),
        "activation_bytes": int(act),
        "act_bytes_per_token": int(activation_bytes_per_token(m)),
        "predicted_peak_bytes": int(state + extra + act),
    }


def rows() -> list[dict]:
    out = []
    for m in MODELS:
        p = m.params()
        for node, n, gpu_gb in NODES:
            for mode in MODES:
                gpus = 1 if mode == "single-bf16" else n
                state, extra = state_bytes(m, mode, n)
                used = (state + extra) / GB
                free = gpu_gb - RESERVED_GB - used
                per_token = activation_bytes_per_token(m)
                tokens = int(free * GB / per_token) if free > 0 else 0
                out.append(
                    {
                        "model": m.name,
                        "params_B": round(p / 1e9, 2),
                        "node": node,
                        "mode": mode,
                        "gpus_used": gpus,
                        "state_GB_per_gpu": round(used, 1),
                        "free_GB_per_gpu": round(free, 1),
                        "act_MB_per_token": round(per_token / 1e6, 2),
                        "max_tokens_per_micro_batch": tokens,
                        "max_16k_transcripts": tokens // SEQ,
                        "fits": free > 0 and tokens >= SEQ,
                    }
                )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--arch", help=f"predict one micro-batch's peak for this shape ({', '.join(ARCHS)})")
    parser.add_argument("--override", action="append", default=[], metavar="FIELD=INT", help="change one field of --arch")
    parser.add_argument("--tokens", type=int, default=SEQ, help="tokens in the micro-batch (with --arch)")
    parser.add_argument("--mode", default="single-bf16", choices=MODES, help="with --arch")
    parser.add_argument("--gpus", type=int, default=1, help="GPUs the state is sharded over (with --arch)")
    args = parser.parse_args()
    if args.arch:
        p = predict(arch(args.arch, args.override), args.mode, args.gpus, args.tokens)
        if args.json:
            print(json.dumps(p, indent=2))
        else:
            print(
                f"{p['arch']} ({p['params'] / 1e9:.3f}B params), {p['mode']} on {p['gpus']} GPU(s), "
                f"{p['tokens_per_micro_batch']:,} tokens/micro-batch: state {p['state_bytes_per_gpu'] / 2**30:.2f} GiB "
                f"+ activations {p['activation_bytes'] / 2**30:.2f} GiB = predicted peak "
                f"{p['predicted_peak_bytes'] / 2**30:.2f} GiB per GPU (tensors only, no {RESERVED_GB:g} GB reserve)"
            )
        return
    table = rows()
    if args.json:
        print(json.dumps(table, indent=2))
        return
    head = "| model | params | node | mode | state GB/GPU | free GB/GPU | act. MB/token | max tokens/micro-batch | 16k transcripts | fits |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for r in table:
        print(
            f"| {r['model']} | {r['params_B']}B | {r['node']} | {r['mode']} | {r['state_GB_per_gpu']} | "
            f"{r['free_GB_per_gpu']} | {r['act_MB_per_token']} | {r['max_tokens_per_micro_batch']:,} | "
            f"{r['max_16k_transcripts']} | {'yes' if r['fits'] else 'no'} |"
        )
    print()
    for a in ASSUMPTIONS:
        print(f"- {a}")


if __name__ == "__main__":
    main()
