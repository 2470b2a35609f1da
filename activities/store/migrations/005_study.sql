-- Scaling studies (seed 002). Every row is keyed by the study (its workflow id) and the logical
-- unit it records, written insert-if-absent: a retried or resumed activity finds what is done.

-- Questions of a study: the seed pool Q, the held-out test set, and questions evolved from seeds.
CREATE TABLE study_questions (
  study_id     text NOT NULL,
  question_id  text NOT NULL,
  source       text NOT NULL CHECK (source IN ('seed', 'test', 'evolved')),
  idx          integer NOT NULL,              -- position within its source, in file (or evolution) order
  domain       text NOT NULL,
  question     text NOT NULL,
  answer       text NOT NULL,                 -- the gold answer
  options      jsonb,                         -- multiple-choice options (labelled A, B, ...) or null
  parent_id    text,                          -- evolved questions: the seed they came from
  PRIMARY KEY (study_id, question_id),
  UNIQUE (study_id, source, idx)
);

-- Question-file lines that were refused, with the reason (empty, duplicate id, not JSON, ...).
CREATE TABLE study_question_rejections (
  study_id  text NOT NULL,
  source    text NOT NULL,
  line      integer NOT NULL,
  reason    text NOT NULL,
  PRIMARY KEY (study_id, source, line)
);

-- Every teacher sample of a stream (one sampling configuration: rs, a temperature, persona,
-- evolved questions), judged. Attempt n is sample index n of the cached model call, so the order
-- is fixed and resuming never re-samples: the set at budget r is the first r accepted by attempt.
CREATE TABLE study_attempts (
  study_id       text NOT NULL,
  stream         text NOT NULL,
  question_id    text NOT NULL,
  attempt        integer NOT NULL,
  response       text NOT NULL,
  final_answer   text,                        -- extracted final answer, null when none was found
  correct        boolean,                     -- null: the judge failed (recorded in llm_rejections)
  judged_by      text NOT NULL CHECK (judged_by IN ('exact', 'llm', 'judge-failed')),
  persona_id     text,                        -- persona protocol: the persona given as system message
  teacher_key    text NOT NULL,               -- llm_calls key of the teacher call
  judge_key      text,                        -- llm_calls key of the judge call, when one was made
  PRIMARY KEY (study_id, stream, question_id, attempt)
);

-- Trace repair of a wrong RS attempt: wrong → check → fix, and whether the fix is right.
CREATE TABLE study_repairs (
  study_id     text NOT NULL,
  question_id  text NOT NULL,
  attempt      integer NOT NULL,              -- the repaired rs attempt
  trace        text NOT NULL,                 -- wrong → check → fix
  revised      text NOT NULL,                 -- the fixed solution alone
  correct      boolean,                       -- the fix judged against the gold answer; null: judge failed
  PRIMARY KEY (study_id, question_id, attempt)
);

-- Embedding selection order of a question's accepted RS responses: the set at budget r is the
-- first r attempts of `selection` (greedy farthest point, so sets are nested).
CREATE TABLE study_selections (
  study_id     text NOT NULL,
  question_id  text NOT NULL,
  selection    integer[] NOT NULL,
  PRIMARY KEY (study_id, question_id)
);

-- One SFT + evaluation cell of the grid.
CREATE TABLE study_cells (
  study_id     text NOT NULL,
  cell_id      text NOT NULL,                 -- <protocol>-q<q>-r<r>-s<seed>
  protocol     text NOT NULL,
  pool         integer NOT NULL,              -- quarters of the seed pool: 1, 2 or 4
  budget       integer NOT NULL,              -- r
  seed         integer NOT NULL,
  examples     integer,                       -- SFT examples, once the data set is built
  questions    integer,                       -- distinct questions among them
  steps        integer,                       -- optimizer steps of the cell's SFT run
  train_metrics jsonb,                        -- last step's trainer metrics
  score        double precision,              -- mean@k on the test set
  evaluated    integer,                       -- test responses judged
  started_at   timestamptz NOT NULL DEFAULT now(),
  trained_at   timestamptz,
  finished_at  timestamptz,
  PRIMARY KEY (study_id, cell_id)
);

-- The SFT examples of a cell, in training order (what the trainer's batches were cut from).
CREATE TABLE study_cell_examples (
  study_id     text NOT NULL,
  cell_id      text NOT NULL,
  position     integer NOT NULL,
  question_id  text NOT NULL,
  stream       text NOT NULL,
  attempt      integer NOT NULL,
  kind         text NOT NULL,                 -- sample | repair-trace | repair-revised
  correct      boolean,                       -- the final answer matched the gold; null: judge failed
  PRIMARY KEY (study_id, cell_id, position)
);

-- Student responses on the test set, judged: mean@k is the mean of `correct` per cell.
CREATE TABLE study_evaluations (
  study_id     text NOT NULL,
  cell_id      text NOT NULL,
  question_id  text NOT NULL,
  sample       integer NOT NULL,
  response     text NOT NULL,
  correct      boolean,                       -- null: the judge failed; never counted as a score
  judged_by    text NOT NULL CHECK (judged_by IN ('exact', 'llm', 'judge-failed')),
  PRIMARY KEY (study_id, cell_id, question_id, sample)
);
