-- Batch mode for model calls (issue 35): a role set to `mode: batch` queues its requests here;
-- they go to the provider in batch jobs (OpenAI Batch API) and their answers land in llm_calls
-- like any other. The ledger knows which requests (custom id = the call's cache key) were sent in
-- which job and which were answered, so a restart, a lost worker or an expired job neither loses a
-- request nor pays for one twice.

-- What a group of lines shares: the endpoint (no key), the ledger role and the batch window.
CREATE TABLE llm_batch_groups (
  group_key   text PRIMARY KEY,            -- sha256 of settings
  settings    jsonb NOT NULL
);

-- One provider batch job. Its id travels as the provider batch's metadata (mockworld_job), so a
-- job created by a process that died before recording it is found, not created again.
CREATE TABLE llm_batch_jobs (
  job_id             text PRIMARY KEY,
  group_key          text NOT NULL REFERENCES llm_batch_groups (group_key),
  state              text NOT NULL CHECK (state IN ('formed', 'submitted', 'done')),
  lines              int NOT NULL,
  provider_batch_id  text UNIQUE,
  input_file_id      text,
  provider_status    text,
  answered           int,                  -- lines answered, when done
  unanswered         int,                  -- lines expired or failed, when done
  failures           int NOT NULL DEFAULT 0, -- sends or polls that failed in a row
  last_error         text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  submitted_at       timestamptz,
  polled_at          timestamptz,
  cancel_requested_at timestamptz,
  done_at            timestamptz
);
CREATE INDEX llm_batch_jobs_open ON llm_batch_jobs (state, created_at) WHERE state <> 'done';

-- One request. queued: waits for a job; sent: in job_id; answered: its answer is in llm_calls;
-- online: left unanswered by maxSubmissions jobs, so its caller sends it online.
CREATE TABLE llm_batch_lines (
  cache_key    text PRIMARY KEY,           -- the call's llm_calls key, sent as the custom_id
  group_key    text NOT NULL REFERENCES llm_batch_groups (group_key),
  identity     jsonb NOT NULL,             -- endpoint, model, request hash, sample index, policy version
  run_id       text,
  role         text,
  body         jsonb,                      -- the chat request as sent; dropped once answered
  state        text NOT NULL CHECK (state IN ('queued', 'sent', 'answered', 'online')),
  job_id       text REFERENCES llm_batch_jobs (job_id),
  submissions  int NOT NULL DEFAULT 0,
  last_error   text,
  enqueued_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX llm_batch_lines_queued ON llm_batch_lines (group_key, enqueued_at) WHERE state = 'queued';
CREATE INDEX llm_batch_lines_job ON llm_batch_lines (job_id);

-- Which job answered a call (null: online).
ALTER TABLE llm_calls ADD COLUMN batch_job_id text;
