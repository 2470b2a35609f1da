-- Reasoning problems in GRPO (issue 17, seed 000 §3.4): a rollout of a kept reasoning problem is an
-- episode like any other (checkpointed per turn, resumed on retry, batched for the trainer), whose
-- task_id is the problem's id (reasoning_problems.problem_id) and whose reward is its correctness
-- reward (correctness_rewards, reward_id = episode_id). An episode's task is therefore a tool-use
-- task or a reasoning problem: the foreign key to tasks alone no longer holds. The episode
-- runners load the task or problem before they open an episode, so no episode names neither.
ALTER TABLE episodes DROP CONSTRAINT IF EXISTS episodes_task_id_fkey;
