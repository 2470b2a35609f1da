-- Answer judge controls (issue 36): for every question whose answers the search benchmark's LLM
-- judge decides (an Evaluation's search groups, a training run's reasoning mix), the judge also
-- grades the question's own reference (must be equivalent) and a wrong answer (must not be), once
-- per run. They never enter a score; their pass rate says whether the judge can be believed.
CREATE TABLE answer_judge_controls (
  run_id        text NOT NULL,
  question_key  text NOT NULL,                  -- sha-256 of the question and its gold answer
  kind          text NOT NULL CHECK (kind IN ('reference', 'wrong')),
  answer        text NOT NULL,                  -- the control answer the judge saw
  expected      boolean NOT NULL,               -- the verdict a believable judge gives
  passed        boolean,                        -- null: no readable verdict (counted as failed)
  reason        text,                           -- the judge's reason, or why there is no verdict
  judge_key     text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, question_key, kind)
);
