"""The policy server's parts, one job each; ``mockworld_trainer.policy_server`` is the command.

An OpenAI-compatible chat endpoint that serves the latest weights of training runs (weight sync) for
CPU and single-machine runs: rollouts of GRPO iteration n+1 must be sampled from the policy that step n
produced. It reads the trainer's checkpoints (checkpoint.py layout) and, before each request, swaps in
the newest applied step of the run when there is one. On clusters use vLLM and its weight-reload path
instead (README, "Weight reload on serving engines").

    reload      Served (one loaded step) and PolicyHolder: keeps one run's newest step loaded
    pool        model names ("<run_id>", "<run_id>@<step>"), the runs on disk, PolicyPool (many runs)
    requests    ApiError and the validation of a chat completion body
    generation  sampling one assistant turn from a served policy, seeded
    tool_calls  ``<tool_call>`` blocks of an output -> OpenAI ``tool_calls``
    forced_calls  turns that must be a tool call (``tool_choice`` required or named): the opening, the name
    app         PolicyServer: what each route answers (models, health, chat completions)
    http        the HTTP transport: routes, bodies, error bodies, version headers

Every response carries the policy version, the applied step whose weights produced it: the header
``x-policy-version: N``, the body field ``policy_version: N`` and ``system_fingerprint: "step-N"``; and the
run: the header ``x-run-id`` and the body field ``run_id``.

Prompts are built by the trainer's own tokenizers (model.py ``generation_prompt``): the byte layout of
the tiny model, or the model's chat template tokenized segment by segment exactly as the trainer will
tokenize the transcript. So the tokens a rollout was sampled from are the tokens the trainer scores.
"""

import os

# Nothing may be fetched from a model hub at run time; set before transformers is imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
