-- Math and search benchmarks and held-out synthetic tasks in Evaluation runs (issue 15): their
-- trials run on the CPU worker (activities/evaluation) and are stored beside tau2's and BFCL's, so
-- one set of metrics reads all.
ALTER TABLE eval_trials DROP CONSTRAINT IF EXISTS eval_trials_benchmark_check;
ALTER TABLE eval_trials ADD CONSTRAINT eval_trials_benchmark_check
  CHECK (benchmark IN ('bfcl', 'tau2', 'math', 'search', 'synthetic'));
