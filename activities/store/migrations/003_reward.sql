-- The rubric judge's verdicts on one episode and the reward computed from them (seed §3.3, eq. 5).
-- Insert-if-absent on the episode id: a retried judge activity finds and returns the first
-- judgement, so a rollout's reward never changes once written. A failed judge writes nothing.
CREATE TABLE judgements (
  episode_id            text PRIMARY KEY REFERENCES episodes (episode_id),
  task_id               text NOT NULL REFERENCES tasks (task_id),
  run_id                text NOT NULL,            -- workflow id of the run that paid for the judge call
  judge_model           text NOT NULL,            -- model name of the judge endpoint
  template_id           text NOT NULL,            -- judge prompt template (v1/judge or file:<sha256 prefix>)
  llm_cache_key         text NOT NULL,            -- llm_calls key of the judge call (first, unrepaired)
  verdicts              jsonb NOT NULL,           -- {forbidden[], subGoals[], requiredInteractions[]} in rubric order
  forbidden_violated    boolean NOT NULL,         -- 𝕀(τ) = 0
  sub_goal_fraction     double precision,         -- achieved / |sub-goals|; null when the rubric has none
  interaction_fraction  double precision,         -- satisfied / |required interactions|; null when none
  reward                double precision NOT NULL CHECK (reward >= 0 AND reward <= 1),
  created_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX judgements_task ON judgements (task_id);
