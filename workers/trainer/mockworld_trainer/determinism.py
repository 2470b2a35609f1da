"""Bit-identical trainer steps, whatever else the machine is doing.

A step's floating-point sums are split across CPU threads, and a different split gives different
low bits: a replay of the recorded batches (the chaos audit's exactly-once proof) only reproduces
the weights if every process applies steps with the same number of threads, and none of the math
libraries picks fewer threads because the machine is busy. So, in every process of this package:

* OpenMP and MKL use exactly MOCKWORLD_TRAINER_THREADS threads (default 1), with their dynamic
  adjustment off (OMP_DYNAMIC, MKL_DYNAMIC): set in the environment before torch is imported
  (``set_thread_env``, called from the package's ``__init__``), and again through torch
  (``configure_torch``, called by every Trainer).
* torch uses deterministic algorithms wherever it has them (on CUDA with cuBLAS's fixed workspace,
  CUBLAS_WORKSPACE_CONFIG); an op without one warns instead of failing the step (``warn_only``):
  on the CPU paths every op the trainer uses has one (the tests run in this mode), and a GPU run
  that meets one should say so in its log rather than stop training.

One thread is the default because the trainer's steps run on a GPU in production, where CPU threads
only feed it, and the CPU-only paths (tests, the chaos bench) train a tiny model on shared cores.
Raise it for CPU training; a replay must then run with the same value.
"""

from __future__ import annotations

import os

THREADS_ENV = "MOCKWORLD_TRAINER_THREADS"


def threads() -> int:
    """The CPU thread count of trainer math: MOCKWORLD_TRAINER_THREADS, default 1."""
    raw = os.environ.get(THREADS_ENV, "1")
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise SystemExit(f"{THREADS_ENV} must be a whole number >= 1, got {raw!r}")
    return n


def set_thread_env() -> None:
    """Fixes the math libraries' thread counts in the environment; only effective before torch is imported."""
    n = str(threads())
    os.environ["OMP_NUM_THREADS"] = n
    os.environ["MKL_NUM_THREADS"] = n
    os.environ["OMP_DYNAMIC"] = "FALSE"
    os.environ["MKL_DYNAMIC"] = "FALSE"
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def configure_torch() -> None:
    """The same thread count through torch (whenever torch was imported), and deterministic algorithms."""
    import torch

    n = threads()
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    torch.use_deterministic_algorithms(True, warn_only=True)
