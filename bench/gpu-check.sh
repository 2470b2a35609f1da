#!/usr/bin/env bash
# One short GPU check of the trainer (issue 16): tokens/s and peak memory of a GRPO step on a random
# model of Qwen3-0.6B's shape (bench/trainer-step.py --model shape:qwen3-0.6b; no weights, no network),
# one 13,000-token response per micro-batch with activation checkpointing, run plainly and under
# `torchrun --standalone --nproc-per-node 1`, each beside bench/capacity.py's predicted peak.
#
#   bash bench/gpu-check.sh --prepare     # here, with network: the wheels the GPU machine lacks -> .gpu-check/
#   bash bench/gpu-check.sh               # on the GPU machine (the device tool: carry [".gpu-check"])
#   bash bench/gpu-check.sh --cpu-smoke   # anywhere: the same steps on a 2-layer shape on the CPU (~1 min)
#
# What it needs there: a python3 with PyTorch (CUDA), transformers, tokenizers and peft. It does not
# use the project's .venv-trainer (a venv of torch is far over the device tool's 64 MiB carry limit):
# it runs under the machine's own python3 (PYTHON=... to choose another), so under that image's
# versions, not the project's pins (the nvidia-h200 image was read with torch 2.11.0+cu130 and
# transformers 5.17.0; the pins are torch 2.13.0 and transformers 5.24.0). The versions it ran with
# are in env.txt. The trainer's one import that image lacks, jsonschema (and its dependencies), comes
# as wheels made by --prepare and installed into /tmp/gpu-check-site. Without torch, or without a
# GPU (outside --cpu-smoke), it stops at once and says so.
#
# Writes under $OUT (default /tmp/gpu-check-out), at most 8 files: env.txt (nvidia-smi, torch's view
# of the device, versions), plain.json / plain.log and torchrun.json / torchrun.log (bench
# summaries and output), summary.json (measured against predicted), gpu-check.log (all of it).
# On an H200 the whole check takes about 3-4 minutes; each run is bounded (RUN_TIMEOUT_S, 200 s).
# Note: under torchrun with one process WORLD_SIZE is 1, so the trainer takes its single-process path
# (group.in_group); that run checks the launcher, FSDP2 needs 2 or more GPUs.
set -uo pipefail
cd "$(dirname "$0")/.."

MODE=gpu
case "${1:-}" in
  "") ;;
  --prepare) MODE=prepare ;;
  --cpu-smoke) MODE=cpu-smoke ;;
  *) echo "usage: bash bench/gpu-check.sh [--prepare | --cpu-smoke]" >&2; exit 2 ;;
esac

WHEELS=.gpu-check/wheels
# The trainer's imports missing from the nvidia-h200 image (KINDS.md's package list), at the versions
# the project's trainer venv resolves; attrs and typing-extensions are in that image.
WHEEL_PINS=(jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1)

if [ "$MODE" = prepare ]; then
  mkdir -p "$WHEELS"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$WHEELS" "${WHEEL_PINS[@]}" || exit 1
  ls -la "$WHEELS"
  echo "carry .gpu-check with the device tool's run (it is git-ignored): bash bench/gpu-check.sh"
  exit 0
fi

OUT=${OUT:-/tmp/gpu-check-out}
mkdir -p "$OUT"

main() {
started=$(date +%s)

if [ -z "${PYTHON:-}" ]; then
  PYTHON=python3
  if [ "$MODE" = cpu-smoke ] && [ -x .venv-trainer/bin/python ]; then PYTHON=.venv-trainer/bin/python; fi
fi
fail() { echo "gpu-check: FAILED: $*"; exit 1; }

"$PYTHON" -c "import torch" 2>/dev/null || fail "no PyTorch in '$PYTHON' ($(command -v "$PYTHON" || echo not found)).
This check runs under a python3 that has torch: the nvidia-h200 device machine's python3 has it; a venv
of torch cannot travel (64 MiB carry limit). Set PYTHON=/path/to/python with torch and CUDA."
if [ "$MODE" = gpu ]; then
  "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
    || fail "torch sees no CUDA device (torch.cuda.is_available() is False); use --cpu-smoke on a CPU machine"
fi

# The trainer's imports; jsonschema and its dependencies from the carried wheels if missing.
if ! "$PYTHON" -c "import jsonschema" 2>/dev/null; then
  ls "$WHEELS"/*.whl >/dev/null 2>&1 || fail "jsonschema is not installed and no wheels are in $WHEELS:
run 'bash bench/gpu-check.sh --prepare' on a machine with network and carry .gpu-check"
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/gpu-check-site "$WHEELS"/*.whl || fail "could not install the wheels in $WHEELS"
  export PYTHONPATH=/tmp/gpu-check-site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=workers/trainer${PYTHONPATH:+:$PYTHONPATH}
"$PYTHON" -c "import jsonschema, transformers, tokenizers, peft, mockworld_trainer.trainer" \
  || fail "the trainer does not import under '$PYTHON' (above); see this script's header"

export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
export MOCKWORLD_TRAINER_ACTIVATION_CHECKPOINTING=1
export MOCKWORLD_BENCH_SHAPES=/tmp/gpu-check-shapes
RUN_TIMEOUT_S=${RUN_TIMEOUT_S:-200}

# (a) the machine as nvidia-smi and torch see it
{
  echo "== mode $MODE, $(date -u +%FT%TZ), $(uname -m), python $PYTHON"
  echo "== nvidia-smi"
  nvidia-smi 2>&1 || echo "(no nvidia-smi)"
  echo "== torch"
  "$PYTHON" - <<'EOF'
import importlib.metadata as md
import torch
print(f"torch {torch.__version__} (CUDA {torch.version.cuda}), "
      + ", ".join(f"{n} {md.version(n)}" for n in ("transformers", "tokenizers", "peft", "jsonschema")))
print(f"cuda available: {torch.cuda.is_available()}, devices: {torch.cuda.device_count()}")
for i in range(torch.cuda.device_count()):
    p = torch.cuda.get_device_properties(i)
    print(f"  cuda:{i} {p.name}, {p.total_memory / 2**30:.1f} GiB, capability {p.major}.{p.minor}, "
          f"{p.multi_processor_count} SMs, bf16 {torch.cuda.is_bf16_supported()}")
EOF
} 2>&1 | tee "$OUT/env.txt"

# (b) and (c): the same bench, plainly and under torchrun
if [ "$MODE" = gpu ]; then
  SHAPE=(--model shape:qwen3-0.6b --response-tokens 13000 --groups 2 --rollouts 2 --steps 3)
else
  SHAPE=(--model shape:qwen3-0.6b --override layers=2 --override hidden=256 --override intermediate=512
    --override vocab=4096 --override heads=4 --override kv_heads=2 --override head_dim=64
    --response-tokens 64 --groups 1 --rollouts 2 --steps 2)
fi
BENCH=(bench/trainer-step.py "${SHAPE[@]}" --spread 0 --micro-batch-size 1 --dtype bfloat16)

run_bench() {  # name, launcher...
  local name=$1
  shift
  local t0 rc
  t0=$(date +%s)
  rm -rf /tmp/gpu-check-tmp "$OUT/$name.json" && mkdir -p /tmp/gpu-check-tmp
  echo "== $name: $* ${BENCH[*]}"
  TMPDIR=/tmp/gpu-check-tmp MOCKWORLD_BENCH_DIR=/tmp/gpu-check-tmp/group timeout "$RUN_TIMEOUT_S" \
    "$@" "${BENCH[@]}" --json-out "$OUT/$name.json" 2>&1 | tee "$OUT/$name.log"
  rc=${PIPESTATUS[0]}
  echo "== $name: exit $rc after $(($(date +%s) - t0)) s"
  rm -rf /tmp/gpu-check-tmp
}
run_bench plain "$PYTHON"
run_bench torchrun "$PYTHON" -m torch.distributed.run --standalone --nproc-per-node 1

# (d) measured peak beside the prediction, (e) summary.json
"$PYTHON" - "$OUT" "$MODE" "$(($(date +%s) - started))" <<'EOF'
import json, sys
from pathlib import Path

out, mode, wall = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
rows, ok = [], True
for name in ("plain", "torchrun"):
    f = out / f"{name}.json"
    if not f.exists():
        ok = False
        rows.append({"run": name, "ok": False, "error": f"no {f.name}: see {name}.log"})
        continue
    s = json.loads(f.read_text())
    pred = s["prediction"] or {}
    measured, predicted = s["peak_memory_bytes"], pred.get("predicted_peak_bytes")
    rows.append({
        "run": name, "ok": True, "device": s["device"], "world_size": s["world_size"],
        "longest_transcript_tokens": s["longest_transcript_tokens"],
        "tokens_per_s": round(s["tokens_per_s"], 1),
        "peak_memory_GiB": round(measured / 2**30, 2),
        "predicted_peak_GiB": None if predicted is None else round(predicted / 2**30, 2),
        "measured_over_predicted": None if not predicted else round(measured / predicted, 3),
        "prediction": pred,
    })
summary = {"mode": mode, "ok": ok, "wall_s": wall, "runs": rows,
           "note": "peak = torch.cuda.max_memory_allocated during a measured step (on CPU: process peak RSS, "
                   "not comparable); prediction = bench/capacity.py single-bf16, no reserve"}
(out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
print(f"== summary ({mode}, {wall} s)")
print("| run | device | tokens/micro-batch | tokens/s | peak GiB | predicted GiB | measured/predicted |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    if not r["ok"]:
        print(f"| {r['run']} | FAILED: {r['error']} | | | | | |")
        continue
    print(f"| {r['run']} | {r['device']} | {r['longest_transcript_tokens']:,} | {r['tokens_per_s']:,.0f} | "
          f"{r['peak_memory_GiB']} | {r['predicted_peak_GiB']} | {r['measured_over_predicted']} |")
sys.exit(0 if ok else 1)
EOF
}

main 2>&1 | tee "$OUT/gpu-check.log"
exit "${PIPESTATUS[0]}"
