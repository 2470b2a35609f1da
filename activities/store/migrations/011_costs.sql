-- Money (issue 20, point 3). Each paid call's cost, from its endpoint's prices when it was paid
-- (null: the endpoint had no prices), and the prompt tokens the provider served from its cache.
-- Answers from mockworld's own cache are not new rows, so they cost nothing.
ALTER TABLE llm_calls ADD COLUMN cached_prompt_tokens integer NOT NULL DEFAULT 0;
ALTER TABLE llm_calls ADD COLUMN cost_usd double precision;
-- Why a run paused itself (its budget reached, and how to raise it); null once it runs again.
ALTER TABLE runs ADD COLUMN pause_reason text;
