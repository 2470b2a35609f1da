-- Coverage judge controls (issue 36): for every task whose demonstrations the coverage judge
-- grades, it also grades a demonstration whose coverage is known — an empty transcript, in which
-- no workflow step is carried out — once per task, with the same prompt and sampling. It never
-- decides which demonstrations are kept; its pass rate says whether the coverage filter can be
-- believed (a judge that calls every step executed keeps everything).
CREATE TABLE coverage_judge_controls (
  run_id          text NOT NULL,
  task_id         text NOT NULL,
  kind            text NOT NULL CHECK (kind IN ('empty')),
  executed_steps  jsonb,                      -- the steps the judge called executed (expected: none)
  passed          boolean,                    -- null: no readable verdict (counted as failed)
  failure         text,                       -- why there is no verdict
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, task_id, kind)
);
