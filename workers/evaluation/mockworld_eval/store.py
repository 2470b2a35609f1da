"""eval_trials in PostgreSQL (activities/store/migrations/008_evaluation.sql, applied by the TypeScript
worker's migrator): a trial's row is written once, insert-if-absent, and read back by every later
attempt, so a trial is run at most once per (evaluation, benchmark, group, task, trial)."""

from __future__ import annotations

import json
import os
from typing import Any, Optional

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/mockworld"

COLUMNS = (
    "evaluation_id, benchmark, task_group, task_id, trial, reward, termination, steps, prompt_tokens, "
    "completion_tokens, failure, detail, trajectory, package_versions, data_version, config, config_hash, "
    "wall_seconds, cpu_seconds"
)


def database_url() -> str:
    return os.environ.get("DATABASE_URL", DEFAULT_DATABASE_URL)


def connect(url: Optional[str] = None) -> psycopg.Connection:
    return psycopg.connect(url or database_url(), autocommit=True, row_factory=dict_row)


def storable(value: Any) -> Any:
    """jsonb holds no NUL character; model output can contain one. It becomes U+FFFD."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [storable(v) for v in value]
    return value


KEY = "evaluation_id = %s AND benchmark = %s AND task_group = %s AND task_id = %s AND trial = %s"


def find(conn: psycopg.Connection, key: tuple) -> Optional[dict]:
    return conn.execute(
        f"SELECT evaluation_id, benchmark, task_group, task_id, trial, reward, termination, steps, "
        f"prompt_tokens, completion_tokens, failure, detail, config_hash FROM eval_trials WHERE {KEY}",
        key,
    ).fetchone()


def insert(conn: psycopg.Connection, row: dict) -> dict:
    """Writes the row unless one exists for its key; returns the row that is stored (the first one)."""
    text_fields = ("failure", "detail", "termination")
    values = {**row, **{f: storable(row[f]) if row.get(f) is not None else None for f in text_fields}}
    for field in ("trajectory", "package_versions", "data_version", "config"):
        values[field] = Jsonb(storable(json.loads(json.dumps(row[field], default=str))))
    names = [c.strip() for c in COLUMNS.split(",")]
    conn.execute(
        f"INSERT INTO eval_trials ({COLUMNS}) VALUES ({', '.join(['%s'] * len(names))}) ON CONFLICT DO NOTHING",
        [values[n] for n in names],
    )
    stored = find(conn, tuple(row[k] for k in ("evaluation_id", "benchmark", "task_group", "task_id", "trial")))
    assert stored is not None
    return stored


def rows_of(conn: psycopg.Connection, evaluation_id: str) -> list[dict]:
    return conn.execute(
        "SELECT benchmark, task_group, task_id, trial, reward, termination, failure, steps, prompt_tokens, "
        "completion_tokens, config_hash FROM eval_trials WHERE evaluation_id = %s "
        "ORDER BY benchmark, task_group, task_id, trial",
        (evaluation_id,),
    ).fetchall()
