-- The world service (services/world): one session per external trajectory (a verl rollout), and
-- every answered request by its id, so a retried request gets the first answer and pays nothing.
CREATE TABLE world_sessions (
  session_id  text PRIMARY KEY,            -- 'ws-' + sha256 of the opening request id
  task_id     text NOT NULL REFERENCES tasks (task_id),
  status      text NOT NULL DEFAULT 'open', -- open | judged | closed
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE world_requests (
  request_id  text PRIMARY KEY,
  session_id  text NOT NULL,
  kind        text NOT NULL,               -- open | tool | ask_user | judge | close
  body_hash   text NOT NULL,               -- sha256 of the canonical request: a reused id with another body is refused
  response    jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX world_requests_session ON world_requests (session_id, created_at);
