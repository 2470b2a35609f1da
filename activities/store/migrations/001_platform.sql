-- Runs started through mockworld: one row per workflow id, written by the workflow's first activity.
CREATE TABLE runs (
  run_id        text PRIMARY KEY,            -- the Temporal workflow id
  kind          text NOT NULL,               -- spec kind: Smoke, Synthesis, GrpoTraining, ScalingStudy
  spec          jsonb NOT NULL,              -- validated spec (never holds secrets)
  status        text NOT NULL DEFAULT 'running',
  summary       jsonb,                       -- small final result shown by `mockworld report`
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);

-- Model responses, one row per logical call. The key is derived from
-- (endpoint, model, request hash, sample index, policy version); a retried or resumed activity
-- finds its answer here and never pays for it again. Usage is counted from this table only,
-- so each call is counted once.
CREATE TABLE llm_calls (
  cache_key          text PRIMARY KEY,
  endpoint           text NOT NULL,
  model              text NOT NULL,
  request_hash       text NOT NULL,
  sample_index       integer NOT NULL,
  policy_version     text NOT NULL,
  run_id             text,
  role               text,
  response           jsonb NOT NULL,
  prompt_tokens      integer NOT NULL DEFAULT 0,
  completion_tokens  integer NOT NULL DEFAULT 0,
  latency_ms         integer NOT NULL,
  upstream_attempts  integer NOT NULL,        -- HTTP attempts including retries
  created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX llm_calls_run_role ON llm_calls (run_id, role);

-- Structured outputs that stayed invalid after the bounded repair: why, and what the model said.
CREATE TABLE llm_rejections (
  cache_key    text PRIMARY KEY,              -- the key of the first (unrepaired) call
  run_id       text,
  role         text,
  schema_name  text NOT NULL,
  reason       text NOT NULL,
  raw_output   text NOT NULL,                 -- truncated to a bounded size
  created_at   timestamptz NOT NULL DEFAULT now()
);
