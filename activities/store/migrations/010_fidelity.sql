-- The seed's recipe, exactly (issue 18): what a rollout was sampled from and whether it can be
-- trained on, judge failures that leave a rollout out instead of failing the run, and student
-- answers cut at the evaluation cap.

-- The policy's response so far, as the serving engine counts it: everything after the opening
-- prompt (the policy's turns and the observations between them), i.e. the last call's prompt plus
-- completion tokens minus the first call's prompt tokens. The episode ends (length_limit) when it
-- reaches GrpoTraining's maxResponseTokens (seed App. A: 13,000).
ALTER TABLE episodes
  ADD COLUMN opening_tokens  integer,                    -- prompt tokens of the first agent call
  ADD COLUMN response_tokens integer NOT NULL DEFAULT 0,
  -- Set when a turn was served by another policy version than the one the rollout was scheduled
  -- for (the x-policy-version header): the rollout is not trained on as on-policy.
  ADD COLUMN off_policy      text;

-- A rollout the judge could not grade: its output stayed malformed after the repair call and one
-- redraw (each recorded in llm_rejections). The rollout is left out of the batch and counted; the
-- run fails only past GrpoTraining's maxUnjudgedFraction. Insert-if-absent: a retried activity finds it.
CREATE TABLE unjudged_rollouts (
  episode_id  text PRIMARY KEY REFERENCES episodes (episode_id),
  task_id     text NOT NULL REFERENCES tasks (task_id),
  run_id      text NOT NULL,
  reason      text NOT NULL,            -- the model layer's rejection reason (not_json, schema, too_large, ...)
  detail      text NOT NULL,
  attempts    integer NOT NULL,         -- judge calls drawn (each with its repair)
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- A student answer that stopped at evaluation.sampling.maxTokens (finish_reason length): graded as
-- it is, and counted, so a cap that cuts answers before their final line shows in the report.
ALTER TABLE study_evaluations ADD COLUMN truncated boolean NOT NULL DEFAULT false;
