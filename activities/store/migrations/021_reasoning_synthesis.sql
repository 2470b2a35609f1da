-- Reasoning problems of a synthesis run (seed 000 §3.4): one row per seed problem, keyed by run
-- and index, holding the seed, the persona scenario the teacher rewrote it into, the teacher's
-- solutions with their extracted answers, and the outcome with its reason. Rows are written
-- insert-if-absent and updated only towards an outcome, so a retried activity changes nothing.
CREATE TABLE reasoning_problems (
  problem_id      text PRIMARY KEY,          -- '<run id>/problem-<idx>'
  run_id          text NOT NULL,
  idx             integer NOT NULL,          -- 0-based position among the run's valid seed problems
  line            integer NOT NULL,          -- 1-based line of the seed file
  kind            text NOT NULL,             -- math | search
  source_question text NOT NULL,
  source_answer   text,                      -- the seed's answer, when it gave one
  persona_id      text,
  scenario        text,                      -- the rewritten problem the teacher solved
  solutions       jsonb,                     -- [{sampleIndex, response, answer}]
  answer          text,                      -- the agreed final answer of a kept problem
  outcome         text NOT NULL DEFAULT 'pending', -- pending | kept | rejected | failed
  drop_reason     text,                      -- rewrite_failed | unparseable_answer | answers_disagree | source_mismatch; failed: the error's type
  drop_detail     text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (run_id, idx)
);
CREATE INDEX reasoning_problems_run_outcome ON reasoning_problems (run_id, outcome);

-- Seed lines that were refused, with the reason (not JSON, a field missing or invalid, too long).
CREATE TABLE reasoning_seed_rejections (
  run_id  text NOT NULL,
  line    integer NOT NULL,
  reason  text NOT NULL,
  PRIMARY KEY (run_id, line)
);
