"""The policy server's HTTP transport: routes, request bodies, OpenAI error bodies, version headers.

What each route answers is app.py's; this module only moves JSON between the socket and it, maps
errors to statuses (ApiError as given, TrainerBadRequest 400, a missing checkpoint 404, anything else
500) and adds the ``x-policy-version`` / ``x-run-id`` headers.
"""

from __future__ import annotations

import http.server
import json
import logging
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from ..errors import BadRequestError, CheckpointMissingError, TrainerError
from . import metrics
from .reload import Served
from .requests import ApiError

if TYPE_CHECKING:
    from .app import PolicyServer

log = logging.getLogger("mockworld.policy_server")

MAX_BODY_BYTES = 64 * 1024 * 1024


class Handler(http.server.BaseHTTPRequestHandler):
    """Routes: ``GET /v1/models``, ``GET /v1/models/<name>``, ``GET /health``, ``GET /metrics``,
    ``POST /v1/chat/completions``."""

    protocol_version = "HTTP/1.1"
    server_version = "mockworld-policy/1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        log.debug("%s %s", self.address_string(), format % args)

    @property
    def app(self) -> PolicyServer:  # the server this handler answers for (set by PolicyServer)
        return self.server.policy_server  # type: ignore[attr-defined]

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        path = self._start("GET")
        if path == "/metrics":
            self._send_text(200, metrics.exposition(), metrics.CONTENT_TYPE)
        elif path == "/v1/models":
            self._answer(self.app.models)
        elif path.startswith("/v1/models/"):
            self._answer(lambda: self.app.model(unquote(path[len("/v1/models/") :])))
        elif path in ("/health", "/v1/health"):
            self._answer(self.app.health)
        elif path == "/v1/chat/completions":
            self._send_error(ApiError(405, "use POST for /v1/chat/completions"))
        else:
            self._send_error(ApiError(404, f"no route for GET {path}"))

    def do_POST(self) -> None:  # noqa: N802
        path = self._start("POST")
        try:
            body = self._read_json()
        except ApiError as e:
            self._send_error(e)
            return
        if path == "/v1/chat/completions":
            self._answer(lambda: self.app.chat_completion(body))
        else:
            self._send_error(ApiError(404, f"no route for POST {path}"))

    def _start(self, method: str) -> str:
        """The request's path; starts its clock and names its route for the metrics."""
        path = self.path.split("?", 1)[0].rstrip("/")
        self._started = time.monotonic()
        self._route = metrics.route_of(method, path)
        return path

    def _read_json(self) -> Any:
        length = self.headers.get("Content-Length")
        if length is None or not length.strip().isdigit():
            self.close_connection = True
            raise ApiError(411, "a Content-Length header (a byte count) is required")
        n = int(length)
        if n > MAX_BODY_BYTES:
            self.close_connection = True
            raise ApiError(413, f"the body is larger than {MAX_BODY_BYTES} bytes")
        raw = self.rfile.read(n)
        try:
            return json.loads(raw)
        except ValueError as e:
            raise ApiError(400, f"the request body is not valid JSON: {e}") from e

    def _answer(self, fn: Any) -> None:
        try:
            body, headers = fn()
        except ApiError as e:
            self._send_error(e)
            return
        except TrainerError as e:
            status = 400 if isinstance(e, BadRequestError) else 404 if isinstance(e, CheckpointMissingError) else 500
            self._send_error(ApiError(status, str(e)))
            return
        except Exception as e:
            log.exception("request failed")
            self._send_error(ApiError(500, f"{type(e).__name__}: {e}"))
            return
        self._send(200, body, headers)

    def _send_error(self, error: ApiError) -> None:
        holder = self.app.holder  # single-run mode: errors carry the version served; multi-run: no one version
        self._send(error.status, error.body(), {} if holder is None else version_headers(holder.served, None))

    def _send(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        self._send_text(status, json.dumps(body).encode(), "application/json", headers)

    def _send_text(self, status: int, payload: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        # Counted before the body goes out: a client that has its answer finds it in /metrics.
        seconds = time.monotonic() - self._started
        metrics.REQUEST_SECONDS.labels(self._route, metrics.outcome_of(status)).observe(seconds)
        self.wfile.write(payload)


def version_headers(served: Served, run_id: str | None) -> dict[str, str]:
    """``x-policy-version: N`` (the step whose weights answered) and, with a run, ``x-run-id``."""
    headers = {"x-policy-version": str(served.step)}
    if run_id is not None:
        headers["x-run-id"] = quote(run_id, safe="-_.")  # header values are latin-1: percent-encoded as on disk
    return headers
