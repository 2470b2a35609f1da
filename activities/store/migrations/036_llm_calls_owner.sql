-- The run a ledger row belongs to (a synthesis run bills each task's calls to `<run>-task-<n>`),
-- indexed by the same expression the queries use (RUN_OF_CALL in activities/llm/spend.ts). Without
-- it a run's spend, usage and the viewer's run list read the whole ledger: a budgeted run checks
-- its spend before each task, so its cost grew with the square of its size (bench/scale.ts). The
-- included columns let the usage sums come from the index alone.
CREATE INDEX llm_calls_owner_role ON llm_calls ((regexp_replace(run_id, '-task-[0-9]+$', '')), role)
  INCLUDE (prompt_tokens, completion_tokens, cost_usd, batch_job_id);
