"""Batches by reference (claim-check): a step's input names where its rollouts are, never carries them.

A ``batch_ref`` (contract: batch-ref.json) is a JSONL file, one record per line, or rows of
``table(run_id text, step int, payload jsonb)`` on DATABASE_URL (as for the TypeScript workers), one
record per row, with run_id and step defaulting to the step's own. Rows are ordered by their
canonical JSON text, so a batch reads the same however the table is stored.

Records (contract: grpo-batch-record.json, sft-batch-record.json) are validated one by one, every bad
one named. A reward that is missing or not finite is refused: rewards that could not be scored must
be retried or dropped upstream, never defaulted (docs/grpo.md: a judge failure is never a score).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from . import contract
from .errors import BadRequestError

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/mockworld"


@dataclass(frozen=True)
class Record:
    """One transcript of a batch."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    group_id: str | None = None  # GRPO only
    reward: float | None = None  # GRPO only


def canonical(obj: Any) -> str:
    """Stable JSON text, used to compare references and to order rows."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def parse_batch_ref(ref: Any, run_id: str, step: int) -> dict[str, Any]:
    """Validates a batch_ref and fills its defaults; the result is what a step records."""
    out = contract.validate("batch-ref", ref, "batch_ref", "batch_ref")
    if out["kind"] == "postgres":
        out = {"run_id": run_id, "step": step, **out}
    return out


def _read_jsonl(path: str) -> list[Any]:
    try:
        with open(path, encoding="utf-8") as f:
            lines = [(n, line) for n, line in enumerate(f, start=1) if line.strip()]
    except OSError as e:
        raise BadRequestError(f"batch_ref: cannot read {path}: {e}") from e
    out = []
    for n, line in lines:
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise BadRequestError(f"batch {path}: line {n} is not JSON: {e}") from e
    return out


def _read_postgres(ref: dict[str, Any]) -> list[Any]:
    import psycopg
    from psycopg import sql

    url = os.environ.get("DATABASE_URL", DEFAULT_DATABASE_URL)
    query = sql.SQL("SELECT payload FROM {} WHERE run_id = %s AND step = %s").format(sql.Identifier(ref["table"]))
    with psycopg.connect(url, connect_timeout=10) as conn:
        rows = conn.execute(query, (ref["run_id"], ref["step"])).fetchall()
    return sorted((row[0] for row in rows), key=canonical)


def parse_records(raw: list[Any], *, grpo: bool, source: str) -> list[Record]:
    """Validates every record against the contract and names every bad one (the first 20) in one error."""
    name = "grpo-batch-record" if grpo else "sft-batch-record"
    found = [] if raw else ["the batch is empty"]
    for i, r in enumerate(raw):
        found += contract.problems(name, r, f"record[{i}]")
    if found:
        contract.raise_problems(f"batch {source}", found)
    return [
        Record(r["messages"], r.get("tools"), str(r["group_id"]) if grpo else None, r["reward"] if grpo else None)
        for r in raw
    ]


def load_batch(ref: dict[str, Any], *, grpo: bool) -> list[Record]:
    """Reads and validates the records a parsed batch_ref points to."""
    raw = _read_jsonl(ref["path"]) if ref["kind"] == "jsonl" else _read_postgres(ref)
    return parse_records(raw, grpo=grpo, source=canonical(ref))
