-- Where and why a task or an episode ended without success, on its own row (issue 14): a finished
-- run leaves no row in a middle stage.
-- tasks.stage = 'failed': the stage it was in when its workflow failed, the error in reject_reason
-- (its type) and reject_detail (its message, bounded).
ALTER TABLE tasks ADD COLUMN failed_stage text;
-- Why an episode ended the way it did, when its end reason alone does not say it: which simulator
-- gave no usable answer (end_reason 'simulator_failed'), how large the transcript would have grown
-- ('transcript_limit').
ALTER TABLE episodes ADD COLUMN end_detail text;
