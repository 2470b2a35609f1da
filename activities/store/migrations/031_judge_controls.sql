-- Judge controls (issue 36): answers whose verdict is known — the question's own reference
-- (CORRECT) and a wrong answer (INCORRECT) — graded by the study's LLM judge beside the real
-- answers of every question it is asked about. They never enter a score; their pass rate says
-- whether the judge's verdicts can be believed.
CREATE TABLE study_judge_controls (
  study_id     text NOT NULL,
  question_id  text NOT NULL,
  kind         text NOT NULL CHECK (kind IN ('reference', 'wrong')),
  response     text NOT NULL,
  expected     boolean NOT NULL,
  verdict      boolean,                       -- null: the judge gave no readable verdict (a failed control)
  judge_key    text,
  PRIMARY KEY (study_id, question_id, kind)
);
