-- Rubric items checked by rules (schemas/rubric-rules.ts): a judgement whose items are all
-- rule-checked calls no judge model, so it has no llm_calls key (judge_model is then 'rules').
-- Each stored verdict names its checker ('judge' or 'rule:<kind>') in the verdicts JSON.
ALTER TABLE judgements ALTER COLUMN llm_cache_key DROP NOT NULL;
ALTER TABLE judge_audit_judgings ALTER COLUMN llm_cache_key DROP NOT NULL;
