"""Two GRPOTrainer steps of a tiny local policy against a mockworld world over OpenEnv.

    python trl_probe.py WORLD_URL OUTPUT_DIR TASK_ID [TASK_ID ...]

Each prompt of the dataset is a task id; the rollout plays it in the world (mockworld_openenv.rollout)
and the world's judge gives the reward. Prints the trainer's step count and logged rewards as JSON.
Run by test/integration/openenv.test.ts.
"""

from __future__ import annotations

import json
import sys

from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from mockworld_openenv.rollout import env_reward, rollout_func
from tiny_policy import tiny_policy


def main(world_url: str, output_dir: str, task_ids: list[str]) -> None:
    model, tokenizer = tiny_policy()
    config = GRPOConfig(
        output_dir=output_dir,
        use_vllm=False,
        use_cpu=True,
        bf16=False,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=8,
        max_steps=2,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        learning_rate=1e-4,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=env_reward,
        args=config,
        train_dataset=Dataset.from_dict({"prompt": task_ids}),
        processing_class=tokenizer,
        rollout_func=rollout_func(world_url, max_turns=2),
    )
    trainer.train()
    rewards = [entry["reward"] for entry in trainer.state.log_history if "reward" in entry]
    print(json.dumps({"global_step": trainer.state.global_step, "rewards": rewards}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
