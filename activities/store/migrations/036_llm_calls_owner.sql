-- What a run has used, kept up to date as the ledger grows, so that what users and budgets ask
-- (a run's spend, its usage by role, the viewer's run list) costs the same at 100,000 tasks as at
-- 10. Before this, each summed the run's ledger rows: a budgeted run checks its spend before every
-- task, so its cost grew with the square of its size (bench/scale.ts).
--
-- The owner of a ledger row is the run it belongs to: a synthesis run bills each task's calls to
-- `<run>-task-<n>` (RUN_OF_CALL in activities/llm/spend.ts). Indexed with the model, for the
-- queries that still read the rows of one run (which roles the embedded model answered).
CREATE INDEX llm_calls_owner_role ON llm_calls ((regexp_replace(run_id, '-task-[0-9]+$', '')), role)
  INCLUDE (model);

-- One row per (owner run, role): sums of the ledger rows, never edited by hand. llm_calls rows are
-- only ever inserted (ON CONFLICT DO NOTHING), so adding each statement's new rows keeps it exact.
CREATE TABLE llm_usage (
  owner_run_id       text NOT NULL,            -- '' for calls without a run
  role               text NOT NULL,            -- '(none)' for calls without a role
  calls              bigint NOT NULL,
  batched_calls      bigint NOT NULL,          -- answered in provider batch jobs
  prompt_tokens      bigint NOT NULL,
  completion_tokens  bigint NOT NULL,
  cost_usd           double precision NOT NULL, -- sum over the priced calls
  priced_calls       bigint NOT NULL,          -- calls with a cost; none = cost unknown, not zero
  PRIMARY KEY (owner_run_id, role)
);

CREATE FUNCTION llm_usage_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Rows in key order: two statements adding to the same runs lock them in the same order.
  INSERT INTO llm_usage AS u
  SELECT coalesce(regexp_replace(run_id, '-task-[0-9]+$', ''), ''), coalesce(role, '(none)'),
         count(*), count(batch_job_id), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),
         coalesce(sum(cost_usd), 0), count(cost_usd)
    FROM inserted GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (owner_run_id, role) DO UPDATE SET
    calls = u.calls + EXCLUDED.calls,
    batched_calls = u.batched_calls + EXCLUDED.batched_calls,
    prompt_tokens = u.prompt_tokens + EXCLUDED.prompt_tokens,
    completion_tokens = u.completion_tokens + EXCLUDED.completion_tokens,
    cost_usd = u.cost_usd + EXCLUDED.cost_usd,
    priced_calls = u.priced_calls + EXCLUDED.priced_calls;
  RETURN NULL;
END $$;

CREATE TRIGGER llm_calls_usage AFTER INSERT ON llm_calls
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION llm_usage_add();

-- The ledger as it stands.
INSERT INTO llm_usage
SELECT coalesce(regexp_replace(run_id, '-task-[0-9]+$', ''), ''), coalesce(role, '(none)'),
       count(*), count(batch_job_id), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),
       coalesce(sum(cost_usd), 0), count(cost_usd)
  FROM llm_calls GROUP BY 1, 2;
