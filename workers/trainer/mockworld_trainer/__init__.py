"""mockworld GPU trainer worker: GRPO and SFT steps, exactly once per (run, step), as Temporal activities.

Modules: contract (validation against the JSON Schema files emitted from the zod contract), config
(typed specs), grpo (advantages and clipped loss), grpo_step and sft (one update over a batch), model
(policies and transcript tokenization), batches (batch references), checkpoint (atomic per-step
checkpoints), trainer (exactly-once steps), activities and worker (Temporal), policy_server (the
command of an OpenAI-compatible endpoint serving a run's latest weights; its parts are in serving/).
See README.md.
"""

from .determinism import set_thread_env

set_thread_env()  # before any module of the package imports torch (determinism.py says why)
