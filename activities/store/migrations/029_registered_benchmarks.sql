-- Benchmark families are registered in code (schemas/local-benchmarks.ts, activities/evaluation/
-- benchmarks), so a new family needs no migration: the benchmark name is checked by the code that
-- writes the row (the workflow's and the activities' schemas), not by a list here.
ALTER TABLE eval_trials DROP CONSTRAINT IF EXISTS eval_trials_benchmark_check;
ALTER TABLE eval_trials ADD CONSTRAINT eval_trials_benchmark_check CHECK (benchmark ~ '^[a-z][a-z0-9_]{0,31}$');
