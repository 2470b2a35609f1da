"""TRL's GRPOTrainer against a mockworld world, through OpenEnv's own client.

`rollout_func(world_url)` returns what `GRPOTrainer(rollout_func=...)` calls with each generation
batch: every prompt names a task (its id); the rollout opens one OpenEnv episode per entry on the
world's `/ws`, lets the policy act for up to `max_turns` turns (tool calls in the Hermes
`<tool_call>{...}</tool_call>` form, anything else is the final answer), feeds the world's tool and
user answers back (masked out of the loss with `env_mask`), and returns the judge's reward as the
`env_reward` column, which `env_reward` hands to the trainer as the reward.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

import torch
from openenv.core import GenericEnvClient

TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)


def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
    """A plain-text transcript for tokenizers without a chat template (tiny test models)."""
    lines = []
    if tools:
        names = ", ".join(t.get("function", {}).get("name", "?") for t in tools)
        lines.append(f"tools: {names}")
    for message in messages:
        content = message.get("content") or ""
        lines.append(f"{message.get('role', '?')}: {content}")
    return "\n".join(lines) + "\nassistant:"


def action_of(text: str) -> dict[str, Any]:
    """The agent's turn as an OpenEnv step: its Hermes-style tool calls, or the text as final answer."""
    calls = []
    for raw in TOOL_CALL.findall(text):
        try:
            call = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(call, dict) and isinstance(call.get("name"), str) and call["name"]:
            arguments = call.get("arguments", {})
            calls.append({"name": call["name"], "arguments": arguments if isinstance(arguments, (dict, str)) else {}})
    return {"content": text, "tool_calls": calls} if calls else {"content": text}


def _generate(model: Any, tokenizer: Any, ids: list[int], max_new_tokens: int) -> tuple[list[int], list[float]]:
    """Samples a continuation of `ids`; its token ids and their log-probabilities."""
    inputs = torch.tensor([ids], device=model.device)
    with torch.no_grad():
        out = model.generate(
            inputs,
            attention_mask=torch.ones_like(inputs),
            max_new_tokens=max_new_tokens,
            do_sample=True,
            output_scores=True,
            return_dict_in_generate=True,
            pad_token_id=tokenizer.pad_token_id,
        )
    new = out.sequences[0, inputs.shape[1] :].tolist()
    logprobs = [
        torch.log_softmax(score[0].float(), dim=-1)[token].item() for score, token in zip(out.scores, new)
    ]
    return new, logprobs


def play(
    world_url: str,
    task_id: str,
    act: Callable[[list[int]], tuple[list[int], list[float], str]],
    encode: Callable[[str], list[int]],
    max_turns: int,
) -> dict[str, Any]:
    """One episode on `task_id`: the prompt's ids, the completion (policy and world tokens), the reward."""
    with GenericEnvClient(base_url=world_url) as env:
        first = env.reset(task_id=task_id).observation
        prompt_ids = encode(render(first["messages"], first.get("tools")))
        completion: list[int] = []
        mask: list[int] = []
        logprobs: list[float] = []
        reward = 0.0
        for _ in range(max_turns):
            ids, lps, text = act(prompt_ids + completion)
            completion += ids
            mask += [1] * len(ids)
            logprobs += lps
            result = env.step(action_of(text))
            if result.done:
                reward = float(result.reward or 0.0)
                break
            answers = encode("\n" + render(result.observation.get("messages", []))[: -len("\nassistant:")] + "\nassistant:")
            completion += answers
            mask += [0] * len(answers)
            logprobs += [0.0] * len(answers)
        return {"prompt_ids": prompt_ids, "completion_ids": completion, "env_mask": mask, "logprobs": logprobs, "env_reward": reward}


def rollout_func(world_url: str, max_turns: int = 4) -> Callable[[list[str], Any], dict[str, list[Any]]]:
    """GRPOTrainer's `rollout_func`: one episode per prompt entry (each prompt is a task id)."""

    def rollout(prompts: list[str], trainer: Any) -> dict[str, list[Any]]:
        model = trainer.accelerator.unwrap_model(trainer.model)
        tokenizer = trainer.processing_class
        max_new = trainer.args.max_completion_length

        def act(ids: list[int]) -> tuple[list[int], list[float], str]:
            new, lps = _generate(model, tokenizer, ids, max_new)
            return new, lps, tokenizer.decode(new, skip_special_tokens=True)

        def encode(text: str) -> list[int]:
            return tokenizer(text, add_special_tokens=False)["input_ids"]

        episodes = [play(world_url, task_id, act, encode, max_turns) for task_id in prompts]
        return {key: [e[key] for e in episodes] for key in episodes[0]}

    return rollout


def env_reward(completions: list[Any], env_reward: list[float], **_: Any) -> list[float]:
    """The reward function that passes the world judge's reward (the `env_reward` column) through."""
    return [float(r) for r in env_reward]
