-- Rubric judge controls (issue 36): transcripts whose verdict is known — an empty one and one
-- that openly does a forbidden behaviour — graded by a run's rubric judge once per task beside
-- its real judgements (GRPO rollouts, Evaluation's synthetic benchmark). They never enter a
-- reward; their pass rate says whether the judge's rewards can be believed.
CREATE TABLE rubric_judge_controls (
  run_id      text NOT NULL,
  task_id     text NOT NULL,
  kind        text NOT NULL CHECK (kind IN ('empty', 'forbidden')),
  expected    text NOT NULL,                  -- what a believable judge says, in words
  passed      boolean,                        -- null: no readable verdict (counted as failed)
  verdicts    jsonb,
  judge_key   text,
  failure     text,                           -- why there is no verdict
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, task_id, kind)
);
