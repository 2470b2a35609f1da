-- A judge stability audit (seed 000 App. B, Figure 6): each audited trajectory (a held-out
-- evaluation episode of a GRPO run) judged k times, one row per (audit run, episode, repeat).
-- Insert-if-absent on that key: a retried or re-run audit finds its judgings and pays no judge
-- call twice. A judging the judge failed (its answer still malformed after the repair) is a row
-- with `failure` set and no score, never a default score.
CREATE TABLE judge_audit_judgings (
  audit_run_id    text NOT NULL,              -- the JudgeAudit run (workflow id)
  episode_id      text NOT NULL REFERENCES episodes (episode_id),
  repeat          integer NOT NULL CHECK (repeat >= 0), -- 0 .. k-1
  training_run_id text NOT NULL,
  policy_step     integer NOT NULL,           -- checkpoint whose held-out evaluation played the episode
  task_id         text NOT NULL,
  sample_index    integer NOT NULL,           -- the judge call's sample index (distinct per repeat)
  judge_model     text NOT NULL,
  llm_cache_key   text NOT NULL,              -- llm_calls key of the judge call (first, unrepaired)
  verdicts        jsonb,                      -- sorted judgement; null on failure
  reward          double precision CHECK (reward >= 0 AND reward <= 1), -- R(τ); null on failure
  failure         text,                       -- why no score (the rejection reason); null when scored
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (audit_run_id, episode_id, repeat),
  CHECK ((reward IS NULL) <> (failure IS NULL))
);
CREATE INDEX judge_audit_judgings_step ON judge_audit_judgings (audit_run_id, policy_step);
