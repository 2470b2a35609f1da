"""A Python Temporal client for mockworld runs with encrypted payloads (MOCKWORLD_PAYLOAD_KEY).

Without a codec, a Python client reads ``Unknown payload encoding binary/encrypted``. This one
encodes and decodes through mockworld's codec server (``mockworld codec-server``, which
``mockworld stack up`` starts when the key is set), so the key stays on that server. Needs only
``temporalio`` (pip install temporalio); connection settings come from Temporal's environment
configuration (TEMPORAL_ADDRESS, TEMPORAL_API_KEY, TEMPORAL_TLS_*, a profile), like mockworld's.

    MOCKWORLD_CODEC_URL=http://127.0.0.1:8888 python remote_codec.py start smoke.json --wait
    MOCKWORLD_CODEC_URL=http://127.0.0.1:8888 python remote_codec.py result <workflow id>

MOCKWORLD_CODEC_AUTH, when the codec server requires it, is sent as the Authorization header.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import urllib.request
import uuid
from collections.abc import Sequence

import temporalio.converter
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.converter import PayloadCodec
from temporalio.envconfig import ClientConfig


class RemoteCodec(PayloadCodec):
    """Temporal's remote codec protocol: POST {"payloads": [...]} (protobuf JSON) to /encode or /decode."""

    def __init__(self, endpoint: str, authorization: str | None = None, namespace: str = "default"):
        self.endpoint = endpoint.rstrip("/")
        self.headers = {"Content-Type": "application/json", "X-Namespace": namespace}
        if authorization:
            self.headers["Authorization"] = authorization

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return await asyncio.to_thread(self._post, "/encode", payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return await asyncio.to_thread(self._post, "/decode", payloads)

    def _post(self, route: str, payloads: Sequence[Payload]) -> list[Payload]:
        body = json.dumps({"payloads": [json_format.MessageToDict(p) for p in payloads]}).encode()
        request = urllib.request.Request(self.endpoint + route, data=body, headers=self.headers, method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.load(response)
        return [json_format.ParseDict(p, Payload()) for p in answer["payloads"]]


async def connect() -> Client:
    """A client from Temporal's environment configuration whose payloads go through the codec server."""
    config = dict(ClientConfig.load_client_connect_config())
    config.setdefault("target_host", "127.0.0.1:7233")
    config.setdefault("namespace", "default")
    codec = RemoteCodec(
        os.environ.get("MOCKWORLD_CODEC_URL", "http://127.0.0.1:8888"),
        os.environ.get("MOCKWORLD_CODEC_AUTH"),
        config["namespace"],
    )
    converter = dataclasses.replace(temporalio.converter.default(), payload_codec=codec)
    return await Client.connect(**config, data_converter=converter)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="start a run from a JSON spec (workflow type = its kind)")
    start.add_argument("spec")
    start.add_argument("--id", default=None)
    start.add_argument("--task-queue", default=os.environ.get("MOCKWORLD_TASK_QUEUE", "mockworld-cpu"))
    start.add_argument("--wait", action="store_true", help="wait for the run and print its result")
    result = commands.add_parser("result", help="wait for a run and print its result")
    result.add_argument("workflow_id")
    args = parser.parse_args()

    client = await connect()
    if args.command == "start":
        with open(args.spec, encoding="utf-8") as f:
            spec = json.load(f)
        workflow_id = args.id or f"{spec['kind'].lower()}-{uuid.uuid4().hex[:8]}"
        handle = await client.start_workflow(spec["kind"], spec, id=workflow_id, task_queue=args.task_queue)
        print(json.dumps({"workflowId": handle.id}))
        if not args.wait:
            return
    else:
        handle = client.get_workflow_handle(args.workflow_id)
    print(json.dumps({"workflowId": handle.id, "result": await handle.result()}))


if __name__ == "__main__":
    asyncio.run(main())
