-- The attempt journal of the CPU workers (workers/attempt-journal.ts): one row per activity
-- attempt running on a worker process, under the worker slot that process holds. A process that
-- dies leaves its rows; the next process to take that slot fails those attempts at once, so
-- Temporal retries them now instead of after their heartbeat timeout. A row is deleted when its
-- attempt ends. The task token is a bearer credential for that one attempt: it lives here beside
-- everything else a run stores, and is useless once the attempt has ended.
CREATE TABLE worker_attempts (
  task_token    bytea PRIMARY KEY,
  worker_slot   text NOT NULL,              -- host/namespace/task queue#n, held by one live process
  activity_type text NOT NULL,
  workflow_id   text,
  activity_id   text NOT NULL,
  attempt       integer NOT NULL,
  pid           integer NOT NULL,           -- the process that ran it (for the log line)
  started_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX worker_attempts_slot ON worker_attempts (worker_slot);
