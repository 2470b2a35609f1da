-- GRPO batches for the Python trainer (workers/trainer/batches.py reads `payload` by run_id and
-- step; it never writes). One row per rollout: a GRPO record {group_id, reward, messages, tools}.
-- Keyed by the episode, so a retried batch build replaces rows instead of duplicating them.
CREATE TABLE trainer_batches (
  run_id      text NOT NULL,               -- the training run (workflow id), the trainer's run_id
  step        integer NOT NULL,            -- trainer step the batch feeds (>= 1)
  episode_id  text NOT NULL,               -- the rollout the record was built from
  payload     jsonb NOT NULL,              -- the trainer's batch record
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, step, episode_id)
);

-- Per-iteration metrics of a GRPO run (trainer step metrics, rollout and evaluation summaries).
CREATE TABLE training_metrics (
  run_id          text NOT NULL,
  iteration       integer NOT NULL,
  policy_version  text NOT NULL,           -- policy after the iteration's step
  metrics         jsonb NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, iteration)
);
