-- Deterministic repairs of a generated tool set that leave its meaning unchanged (issue 22), by
-- stage: {"toolset": [...], "refine": [...]}, each entry {action: dropped_copy | renamed, index,
-- name[, to]}. tasks.draft_tools and tasks.tools hold the sets after these repairs; the model's
-- own answer stays in llm_calls.
ALTER TABLE tasks ADD COLUMN tool_repairs jsonb;
