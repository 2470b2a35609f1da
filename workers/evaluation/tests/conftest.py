"""Shared fixtures: a fresh database with the evaluation table, and the scripted model server
(testkit/model-server.ts, the project's only test double) replaying ground-truth plans."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Callable, Iterator

import psycopg
import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
MIGRATION = REPO_ROOT / "activities" / "store" / "migrations" / "008_evaluation.sql"


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    """A database of its own on the machine's PostgreSQL, holding the migration's eval_trials."""
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/mockworld")
    admin = base.rsplit("/", 1)[0] + "/postgres"
    name = f"mockworld_eval_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = base.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(MIGRATION.read_text())
    previous = os.environ.get("DATABASE_URL")
    os.environ["DATABASE_URL"] = url
    yield url
    if previous is None:
        os.environ.pop("DATABASE_URL", None)
    else:
        os.environ["DATABASE_URL"] = previous
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class ReplayServer:
    """testkit/eval-replay-server.ts in a node process; `stats()` are the server's request counts."""

    def __init__(self, plans: dict, directory: Path) -> None:
        path = directory / f"plans-{uuid.uuid4().hex[:8]}.json"
        path.write_text(json.dumps(plans))
        self.process = subprocess.Popen(
            ["node", "--import", "tsx", "testkit/eval-replay-server.ts", "--serve", str(path)],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.process.stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise RuntimeError("the replay model server did not start (is node_modules installed? npm ci)")
        self.url: str = json.loads(line)["url"]
        self._next = 0

    def stats(self) -> dict:
        self._next += 1
        self.process.stdin.write(json.dumps({"id": self._next, "cmd": "stats"}) + "\n")  # type: ignore[union-attr]
        self.process.stdin.flush()  # type: ignore[union-attr]
        return json.loads(self.process.stdout.readline())["stats"]  # type: ignore[union-attr]

    def close(self) -> None:
        self.process.stdin.close()  # type: ignore[union-attr]
        self.process.wait(timeout=30)


@pytest.fixture
def replay_server(tmp_path: Path) -> Iterator[Callable[[dict], ReplayServer]]:
    started: list[ReplayServer] = []

    def start(plans: dict) -> ReplayServer:
        server = ReplayServer(plans, tmp_path)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()

