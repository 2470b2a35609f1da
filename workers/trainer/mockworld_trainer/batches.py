"""Batches by reference (claim-check): a step's input names where its rollouts are, never carries them.

``batch_ref`` is one of
  {"kind": "jsonl", "path": "/abs/file.jsonl"}                       one record per line
  {"kind": "postgres", "table"?: "trainer_batches", "run_id"?: str, "step"?: int}
      rows of ``table(run_id text, step int, payload jsonb)``, one record per row; run_id and step
      default to the step's own; the server is DATABASE_URL (as for the TypeScript workers).
Rows are ordered by their canonical JSON text, so a batch reads the same however the table is stored.

A GRPO record is {"group_id": str|int, "reward": number, "messages": [chat messages], "tools"?: [...]};
an SFT record is {"messages": [...], "tools"?: [...]}. Every record needs at least one assistant turn.
A reward that is missing or not finite is an error naming the record: rewards that could not be
scored must be retried or dropped upstream, never defaulted (DESIGN: a judge failure is surfaced).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from typing import Any

from .errors import BadRequestError
from .model import ROLES

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/mockworld"
DEFAULT_TABLE = "trainer_batches"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


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
    if not isinstance(ref, dict):
        raise BadRequestError("batch_ref: expected an object with a 'kind'")
    kind = ref.get("kind")
    if kind == "jsonl":
        unknown = set(ref) - {"kind", "path"}
        path = ref.get("path")
        if unknown or not isinstance(path, str) or not os.path.isabs(path):
            raise BadRequestError(f"batch_ref: jsonl needs an absolute 'path' and nothing else (got {canonical(ref)})")
        return {"kind": "jsonl", "path": path}
    if kind == "postgres":
        unknown = set(ref) - {"kind", "table", "run_id", "step"}
        out = {
            "kind": "postgres",
            "table": ref.get("table", DEFAULT_TABLE),
            "run_id": ref.get("run_id", run_id),
            "step": ref.get("step", step),
        }
        if unknown or not isinstance(out["table"], str) or not _IDENTIFIER.match(out["table"]):
            raise BadRequestError(
                f"batch_ref: postgres takes table (an SQL identifier), run_id, step (got {canonical(ref)})"
            )
        if not isinstance(out["run_id"], str) or type(out["step"]) is not int:
            raise BadRequestError("batch_ref: postgres run_id must be a string and step an integer")
        return out
    raise BadRequestError(f"batch_ref.kind: expected 'jsonl' or 'postgres', got {kind!r}")


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


def _check_messages(messages: Any, where: str, errors: list[str]) -> None:
    if not isinstance(messages, list) or not messages:
        errors.append(f"{where}.messages: expected a non-empty list")
        return
    for j, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            errors.append(f"{where}.messages[{j}].role: expected one of {', '.join(ROLES)}")
        elif not isinstance(m.get("content"), str | list | type(None)):
            errors.append(f"{where}.messages[{j}].content: expected a string, a list of parts or null")
    if not any(isinstance(m, dict) and m.get("role") == "assistant" for m in messages):
        errors.append(f"{where}.messages: no assistant turn, so nothing to train on")


def parse_records(raw: list[Any], *, grpo: bool, source: str) -> list[Record]:
    """Validates every record and names every bad one (up to 20) in one error."""
    errors: list[str] = []
    records: list[Record] = []
    if not raw:
        errors.append("the batch is empty")
    for i, r in enumerate(raw):
        where = f"record[{i}]"
        if not isinstance(r, dict):
            errors.append(f"{where}: expected an object")
            continue
        _check_messages(r.get("messages"), where, errors)
        tools = r.get("tools")
        if tools is not None and not isinstance(tools, list):
            errors.append(f"{where}.tools: expected a list of function specs")
        group_id = reward = None
        if grpo:
            group_id, reward = r.get("group_id"), r.get("reward")
            if not isinstance(group_id, str | int) or isinstance(group_id, bool):
                errors.append(f"{where}.group_id: expected a string or integer")
            if isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(reward):
                errors.append(
                    f"{where}.reward: expected a finite number, got {reward!r} (unscored rollouts are not trainable)"
                )
        if not errors:
            records.append(Record(r["messages"], tools, None if group_id is None else str(group_id), reward))
    if errors:
        shown = errors[:20] + ([f"... and {len(errors) - 20} more"] if len(errors) > 20 else [])
        raise BadRequestError(f"invalid batch {source}:\n  " + "\n  ".join(shown))
    return records


def load_batch(ref: dict[str, Any], *, grpo: bool) -> list[Record]:
    """Reads and validates the records a parsed batch_ref points to."""
    raw = _read_jsonl(ref["path"]) if ref["kind"] == "jsonl" else _read_postgres(ref)
    return parse_records(raw, grpo=grpo, source=canonical(ref))
