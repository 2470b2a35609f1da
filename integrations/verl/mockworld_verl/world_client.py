"""The world service over HTTP (docs/synthesis.md "The world service"): one client per process, JSON in, JSON out.

Every request carries a request id the caller derives from the trajectory and its turn, so a retry
(of one request after a dropped connection, or of a whole trajectory) is answered from the
service's stored answer and pays for no model call twice. A connection that fails, or a 503/504 on
the way, is retried with the same id; a 4xx is the caller's mistake and a 502 is the world failing
(the judge above all): both are errors, never an answer or a score made up here.
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

URL_ENV = "MOCKWORLD_WORLD_URL"
AUTH_ENV = "MOCKWORLD_WORLD_AUTH"
RETRYABLE_STATUSES = frozenset({503, 504})


class WorldServiceError(RuntimeError):
    """The world service refused a request (4xx) or could not answer it (5xx)."""

    def __init__(self, status: int, path: str, message: str):
        super().__init__(f"world service {path}: {status} {message}")
        self.status = status


@dataclass(frozen=True)
class WorldClient:
    """Where the world service is and how to reach it; from the environment, never from the data."""

    base_url: str
    authorization: str | None = None
    timeout_s: float = 300.0
    attempts: int = 4

    @classmethod
    def from_env(cls) -> "WorldClient":
        url = os.environ.get(URL_ENV)
        if not url:
            raise RuntimeError(f"{URL_ENV} is not set: the URL of `mockworld world` (e.g. http://world:11438)")
        return cls(base_url=url.rstrip("/"), authorization=os.environ.get(AUTH_ENV) or None)

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POSTs `body` to `path`; retries transport failures with the same body (and request id)."""
        delay = 0.5
        for attempt in range(1, self.attempts + 1):
            try:
                return await asyncio.to_thread(self._post_once, path, body)
            except WorldServiceError as error:
                if error.status not in RETRYABLE_STATUSES or attempt == self.attempts:
                    raise
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if attempt == self.attempts:
                    raise
            await asyncio.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")

    def _post_once(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        headers = {"content-type": "application/json"}
        if self.authorization:
            headers["authorization"] = self.authorization
        request = urllib.request.Request(
            f"{self.base_url}{path}", data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as error:
            text = error.read().decode("utf-8", "replace")
            try:
                message = json.loads(text).get("error", text)
            except ValueError:
                message = text
            raise WorldServiceError(error.code, path, message) from None

    # The service's five requests (services/world/server.ts).

    async def open_session(self, request_id: str, task_id: str) -> dict[str, Any]:
        return await self.post("/v1/sessions", {"request_id": request_id, "task_id": task_id})

    async def call_tool(self, session_id: str, name: str, request_id: str, arguments: Any) -> dict[str, Any]:
        return await self.post(
            f"/v1/sessions/{session_id}/tools/{name}", {"request_id": request_id, "arguments": arguments}
        )

    async def ask_user(self, session_id: str, request_id: str, question: str) -> dict[str, Any]:
        return await self.post(
            f"/v1/sessions/{session_id}/ask_user", {"request_id": request_id, "question": question}
        )

    async def judge(self, session_id: str, request_id: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        return await self.post(f"/v1/sessions/{session_id}/judge", {"request_id": request_id, "messages": messages})

    async def close(self, session_id: str, request_id: str) -> dict[str, Any]:
        return await self.post(f"/v1/sessions/{session_id}/close", {"request_id": request_id})
