-- Reasoning tasks' tools and rewards (issue 17): the offline search index and correctness rewards.

-- A document collection the user supplied (a JSONL corpus), indexed for the `search` tool. The
-- sha256 of the file indexed: indexing the same file again changes nothing, another file replaces
-- the collection's documents in one transaction.
CREATE TABLE search_collections (
  name text PRIMARY KEY,
  source text NOT NULL,
  sha256 text NOT NULL,
  documents integer NOT NULL,
  indexed_at timestamptz NOT NULL DEFAULT now()
);

-- English full-text search over title (weight A) and text (weight B).
CREATE TABLE search_documents (
  collection text NOT NULL REFERENCES search_collections (name) ON DELETE CASCADE,
  doc_id text NOT NULL,
  title text NOT NULL,
  body text NOT NULL,
  url text,
  tsv tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', body), 'B')
  ) STORED,
  PRIMARY KEY (collection, doc_id)
);
CREATE INDEX search_documents_tsv ON search_documents USING gin (tsv);

-- One correctness reward (seed §3.4: reasoning tasks "evaluated by answer correctness"): 1 or 0,
-- with the answer extracted from the response and how it was judged. Keyed by a caller-chosen id
-- (workflow id + rollout): a retried activity finds the stored reward and judges nothing again.
CREATE TABLE correctness_rewards (
  reward_id text PRIMARY KEY,
  run_id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('math', 'search')),
  gold text NOT NULL,
  -- The scored response, by hash: the same id with another response is a caller bug, refused.
  response_sha256 text NOT NULL,
  extracted_answer text,
  reward smallint NOT NULL CHECK (reward IN (0, 1)),
  method text NOT NULL,
  detail text NOT NULL,
  judge_cache_key text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX correctness_rewards_run ON correctness_rewards (run_id);
