-- Personas of a synthesis run, as loaded from its JSONL file (valid lines only, in file order).
CREATE TABLE synthesis_personas (
  run_id      text NOT NULL,
  idx         integer NOT NULL,            -- 0-based position among the run's valid personas
  persona_id  text NOT NULL,
  persona     text NOT NULL,
  PRIMARY KEY (run_id, idx),
  UNIQUE (run_id, persona_id)
);

-- Persona lines that were refused, with the reason (empty, duplicate id, oversized, not JSON).
CREATE TABLE synthesis_persona_rejections (
  run_id  text NOT NULL,
  line    integer NOT NULL,                -- 1-based line number in the file
  reason  text NOT NULL,
  PRIMARY KEY (run_id, line)
);

-- One synthesized task: its lifecycle stage and every artefact, written stage by stage.
CREATE TABLE tasks (
  task_id         text PRIMARY KEY,        -- '<run id>/task-<idx>'
  run_id          text NOT NULL,
  idx             integer NOT NULL,
  persona_id      text NOT NULL,
  stage           text NOT NULL DEFAULT 'pending',
  reject_reason   text,
  reject_detail   text,
  scenario        text,
  workflow        jsonb,                   -- high-level workflow steps (strings)
  draft_tools     jsonb,                   -- tool set as first generated
  tools           jsonb,                   -- refined tool set shown to the agent
  forbidden       jsonb,                   -- task-level forbidden behaviours
  request         text,                    -- over-specified request
  refinement      jsonb,                   -- removed tools with reasons, distractors added
  instruction     text,                    -- I: what the agent sees
  hidden_context  text,                    -- C: what only the simulated user knows
  rubric          jsonb,                   -- forbidden, sub-goals, required interactions
  coverage        jsonb,                   -- per demonstration: executed steps and fraction
  provenance      jsonb,                   -- models, template versions, tokens by role
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (run_id, idx)
);
CREATE INDEX tasks_run_stage ON tasks (run_id, stage);

-- One episode in the mock world (teacher demonstration, training rollout, evaluation).
-- The transcript is checkpointed after every turn, so a retried activity resumes mid-episode.
CREATE TABLE episodes (
  episode_id      text PRIMARY KEY,        -- deterministic: derived from the run, task and sample
  task_id         text NOT NULL REFERENCES tasks (task_id),
  purpose         text NOT NULL,           -- demonstration | rollout | evaluation
  sample_index    integer NOT NULL,
  policy_version  text NOT NULL,
  messages        jsonb NOT NULL DEFAULT '[]',
  turns           integer NOT NULL DEFAULT 0,
  tool_calls      integer NOT NULL DEFAULT 0,
  user_questions  integer NOT NULL DEFAULT 0,
  tool_errors     integer NOT NULL DEFAULT 0,
  end_reason      text,                    -- final_answer | max_turns | user_stop | null while running
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX episodes_task ON episodes (task_id, purpose);

-- The per-task finite mapping M = {(tool, args) → response} of the mock tools (seed eq. 4).
-- Insert-if-absent on the primary key: the first writer's response is what every rollout sees.
CREATE TABLE tool_mappings (
  task_id     text NOT NULL,
  tool        text NOT NULL,
  args_key    text NOT NULL,               -- sha256 of the canonical JSON of the arguments
  args        jsonb NOT NULL,
  response    jsonb NOT NULL,
  source      text NOT NULL,               -- simulated | equivalent (reused an existing entry's response)
  equivalent_to text,                      -- args_key of the entry whose response was reused (source = equivalent)
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (task_id, tool, args_key)
);
