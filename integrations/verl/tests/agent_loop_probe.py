"""Runs the mockworld_agent loop the way verl's AgentLoopWorker does, and prints what it produced.

test/integration/verl-adapter.test.ts runs this with .venv-verl's python against the real world
service and the scripted model server. Everything here is verl's own or the adapter's, except the
model: a tokenizer built here (one token per character, nothing from a hub) and a server manager
that turns the loop's prompt ids into a chat request to the scripted policy and its answer back
into token ids.

    agent_loop_probe.py <verl.parquet> <uid> <trajectories> <cache dir>

The rows go through verl's RLHFDataset; `trajectories` rollouts of the first row run concurrently,
as one GRPO group (one uid). Prints JSON: per trajectory its rendered prompt, the response split
into runs of equal mask, the reward, and the loop's extra fields.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import urllib.request
from pathlib import Path

import hydra
import torch
import verl
from omegaconf import OmegaConf
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
from verl.tools.tool_registry import load_all_tools
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.workers.rollout.replica import TokenOutput

import mockworld_verl

MARKERS = ["<tool_call>", "</tool_call>", "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>", "<|end|>"]
# Tools first (the raw dicts the loop passes, nested parts and all), then each message; an assistant's
# tool calls in the Hermes form verl's default parser reads.
CHAT_TEMPLATE = (
    "{%- if tools %}<|system|>tools:\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}<|end|>{% endif %}"
    "{%- for m in messages %}"
    "{%- if m.role == 'assistant' %}<|assistant|>{{ m.content }}"
    "{%- for c in (m.tool_calls or []) %}<tool_call>{{ {'name': c.function.name, 'arguments': c.function.arguments}"
    " | tojson }}</tool_call>{% endfor %}<|end|>"
    "{%- else %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|assistant|>{% endif %}"
)


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {"[UNK]": 0, "[PAD]": 1}
    for code in [9, 10, *range(32, 0x3000)]:
        vocab.setdefault(chr(code), len(vocab))
    chars = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    chars.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    chars.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=chars, unk_token="[UNK]", pad_token="[PAD]", clean_up_tokenization_spaces=False
    )
    tokenizer.add_tokens(MARKERS)
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


class ScriptedPolicy:
    """verl's server manager, reduced to `generate`: prompt ids in, the scripted policy's token ids out."""

    def __init__(self, url: str, tokenizer: PreTrainedTokenizerFast):
        self.url = url.rstrip("/")
        self.tokenizer = tokenizer

    async def generate(self, request_id: str, *, prompt_ids: list[int], sampling_params: dict, **_: object) -> TokenOutput:
        text = self.tokenizer.decode(prompt_ids)
        body = {"model": "scripted-policy", "messages": [{"role": "user", "content": text}]}
        request = urllib.request.Request(
            f"{self.url}/chat/completions",
            data=json.dumps(body).encode("utf-8"),
            headers={"content-type": "application/json", "x-mockworld-role": "policy"},
            method="POST",
        )
        answer = await asyncio.to_thread(lambda: json.loads(urllib.request.urlopen(request, timeout=60).read()))
        content = answer["choices"][0]["message"]["content"]
        return TokenOutput(token_ids=self.tokenizer.encode(content, add_special_tokens=False), stop_reason="completed")


def trainer_config(cache_dir: str):
    """verl's own GRPO trainer defaults, with the adapter's YAML files and the overrides its README names."""
    config = OmegaConf.load(Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml")
    overrides = {
        "actor_rollout_ref.rollout.prompt_length": 16384,
        "actor_rollout_ref.rollout.response_length": 8192,
        "actor_rollout_ref.rollout.multi_turn.enable": True,
        "actor_rollout_ref.rollout.multi_turn.max_assistant_turns": 8,
        "actor_rollout_ref.rollout.multi_turn.max_user_turns": 8,
        "actor_rollout_ref.rollout.multi_turn.max_tool_response_length": 4096,
        "actor_rollout_ref.rollout.multi_turn.format": "hermes",
        "actor_rollout_ref.rollout.multi_turn.tool_config_path": mockworld_verl.config_path("tool_config.yaml"),
        "actor_rollout_ref.rollout.agent.agent_loop_config_path": mockworld_verl.config_path("agent_loop.yaml"),
        "data.prompt_key": "prompt",
        "data.max_prompt_length": 16384,
        "data.filter_overlong_prompts": True,
        "data.filter_overlong_prompts_workers": 1,
        "data.cache_dir": cache_dir,
        "data.return_raw_chat": True,
    }
    for key, value in overrides.items():
        OmegaConf.update(config, key, value, force_add=True)
    return config


def segments(response_ids: list[int], mask: list[int], tokenizer) -> list[dict]:
    """The response as runs of equal mask: what the policy said (1) and what the world said (0)."""
    runs: list[dict] = []
    start = 0
    for i in range(1, len(mask) + 1):
        if i == len(mask) or mask[i] != mask[start]:
            runs.append({"mask": mask[start], "text": tokenizer.decode(response_ids[start:i])})
            start = i
    return runs


async def main() -> None:
    data_file, uid, count, cache_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    tokenizer = tiny_tokenizer()
    config = trainer_config(cache_dir)
    rollout = config.actor_rollout_ref.rollout
    dataset = RLHFDataset(data_files=data_file, tokenizer=tokenizer, config=config.data)
    row = {k: v for k, v in dataset[0].items() if not isinstance(v, torch.Tensor)}

    # As AgentLoopWorker: the loops of agent_loop_config_path, the tools of tool_config_path.
    for entry in OmegaConf.load(rollout.agent.agent_loop_config_path):
        _agent_loop_registry[entry.name] = entry
    tools = load_all_tools(tool_config_path=rollout.multi_turn.tool_config_path, function_tool_path=None)
    policy = ScriptedPolicy(os.environ["MOCKWORLD_TEST_POLICY_URL"], tokenizer)

    async def trajectory() -> dict:
        kwargs = {k: v for k, v in row.items() if k != "agent_name"}
        loop = hydra.utils.instantiate(
            config=_agent_loop_registry[row["agent_name"]],
            trainer_config=DictConfigWrap(config=config),
            server_manager=policy,
            tokenizer=tokenizer,
            processor=None,
            hf_model_type=None,
            dataset_cls=RLHFDataset,
            data_config=DictConfigWrap(config.data),
            tools=ToolListWrap(tools),
        )
        sampling = {"temperature": rollout.temperature, "top_p": rollout.top_p, "logprobs": False}
        output = await loop.run(sampling, uid=uid, **kwargs)
        return {
            "loop": type(loop).__name__,
            "prompt_text": tokenizer.decode(output.prompt_ids),
            "response_length": len(output.response_ids),
            "mask_length": len(output.response_mask),
            "segments": segments(output.response_ids, output.response_mask, tokenizer),
            "num_turns": output.num_turns,
            "reward_score": output.reward_score,
            "reward_extra_info": output.extra_fields["reward_extra_info"],
            "mockworld": output.extra_fields["mockworld"],
            "score": mockworld_verl.reward.compute_score(
                data_source=row["data_source"],
                solution_str="",
                ground_truth=row["reward_model"]["ground_truth"],
                extra_info={**row["extra_info"], **output.extra_fields},
            ),
        }

    results = await asyncio.gather(*(trajectory() for _ in range(count)))
    print(json.dumps({"row_keys": sorted(row), "trajectories": results}))


if __name__ == "__main__":
    import mockworld_verl.reward  # noqa: F401  (compute_score, as verl's reward path loads it)

    asyncio.run(main())
