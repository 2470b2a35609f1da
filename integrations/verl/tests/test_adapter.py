"""The adapter's parts that need no world: transcripts for the judge, schemas, keys, the reward, retries.

The loop itself runs against the real world service in test/integration/verl-adapter.test.ts.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from omegaconf import OmegaConf
from verl.tools.tool_registry import initialize_tools_from_config

import mockworld_verl
import mockworld_verl.reward
from mockworld_verl.agent_loop import openai_messages, reward_parts
from mockworld_verl.reward import compute_score
from mockworld_verl.tools import AskUserTool, WorldTool, tools_of, trajectory_key
from mockworld_verl.world_client import WorldClient, WorldServiceError

NESTED = {
    "type": "function",
    "function": {
        "name": "update_record",
        "description": "Change fields of a record",
        "parameters": {
            "type": "object",
            "properties": {
                "changes": {
                    "type": "object",
                    "properties": {"notes": {"type": "array", "items": {"type": "string"}}},
                }
            },
        },
    },
}
ODD = {"type": "function", "function": {"name": "find", "parameters": {"type": "object", "properties": {"q": {}}}}}
ASK = {"type": "function", "function": {"name": "ask_user", "parameters": {"type": "object", "properties": {}}}}


def test_tools_keep_each_raw_schema_whole_and_route_ask_user_to_the_user():
    tools = tools_of([NESTED, ODD, ASK])
    assert [type(t) for t in tools] == [WorldTool, WorldTool, AskUserTool]
    assert tools[0].raw_schema == NESTED  # verl's own schema object drops `items`; the raw dict keeps it
    assert "items" not in json.dumps(tools[0].tool_schema.model_dump())
    assert tools[1].raw_schema == ODD and tools[1].name == "find"  # a schema verl's model refuses still works


def test_the_tool_config_declares_ask_user_for_verl():
    (tool,) = initialize_tools_from_config(mockworld_verl.config_path("tool_config.yaml"))
    assert isinstance(tool, AskUserTool) and tool.name == "ask_user"
    (loop,) = OmegaConf.load(mockworld_verl.config_path("agent_loop.yaml"))
    assert loop.name == "mockworld_agent"
    assert loop._target_ == "mockworld_verl.agent_loop.MockworldAgentLoop"


def test_trajectory_keys_depend_on_run_uid_and_slot_only():
    key = trajectory_key("run", "uid", 0)
    assert key == trajectory_key("run", "uid", 0)
    assert len({key, trajectory_key("run", "uid", 1), trajectory_key("other", "uid", 0)}) == 3


def test_verl_transcripts_become_openai_messages_with_ids_and_json_arguments():
    messages = openai_messages(
        [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"type": "function", "function": {"name": "a", "arguments": {"x": 1}}},
                    {"type": "function", "id": "own", "function": {"name": "b", "arguments": {}}},
                ],
            },
            {"role": "tool", "content": "A"},
            {"role": "tool", "content": [{"type": "text", "text": "B"}]},
            {"role": "assistant", "content": "done"},
        ]
    )
    calls = messages[2]["tool_calls"]
    assert [c["id"] for c in calls] == ["call-1-0", "own"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"x": 1}
    assert messages[3] == {"role": "tool", "tool_call_id": "call-1-0", "content": "A"}
    assert messages[4] == {"role": "tool", "tool_call_id": "own", "content": "B"}
    assert messages[5] == {"role": "assistant", "content": "done"}


def test_compute_score_returns_the_worlds_verdict_and_refuses_a_row_without_one():
    verdict = {"reward": 0.75, "session_id": "ws-1"}
    assert compute_score("mockworld/r", "", "{}", {"mockworld": verdict}) == {"score": 0.75, "world_session": "ws-1"}
    with pytest.raises(ValueError, match="mockworld_agent"):
        compute_score("mockworld/r", "text", "{}", {"task_id": "t"})
    with pytest.raises(ValueError, match="not in"):
        compute_score("mockworld/r", "", "{}", {"mockworld": {"reward": 2.0}})
    parts = reward_parts({"reward": 0.0, "sub_goal_fraction": None, "interaction_fraction": 1, "forbidden_violated": True})
    assert parts["forbidden_violated"] == 1.0 and parts["sub_goal_fraction"] != parts["sub_goal_fraction"]  # NaN


class _Flaky(BaseHTTPRequestHandler):
    """Answers 503 to the first request of each id, then echoes the id; 400 for `bad`; 502 for `judge`."""

    seen: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        _Flaky.seen.append({"auth": self.headers.get("authorization"), **body})
        status, answer = 200, {"echo": body["request_id"]}
        if body["request_id"] == "bad":
            status, answer = 400, {"error": "bad request: request_id"}
        elif body["request_id"] == "judge":
            status, answer = 502, {"error": "the world could not answer: judge"}
        elif sum(s["request_id"] == body["request_id"] for s in _Flaky.seen) == 1:
            status, answer = 503, {"error": "busy"}
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_the_client_retries_with_the_same_request_id_and_never_retries_a_refusal():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = WorldClient(f"http://127.0.0.1:{server.server_port}", authorization="k" * 20, attempts=3)
        assert asyncio.run(client.post("/v1/sessions", {"request_id": "r1"})) == {"echo": "r1"}
        assert [s["request_id"] for s in _Flaky.seen] == ["r1", "r1"]
        assert _Flaky.seen[0]["auth"] == "k" * 20
        for request_id, status in (("bad", 400), ("judge", 502)):
            with pytest.raises(WorldServiceError) as error:
                asyncio.run(client.post("/v1/sessions/x/judge", {"request_id": request_id}))
            assert error.value.status == status
        assert [s["request_id"] for s in _Flaky.seen].count("judge") == 1
    finally:
        server.shutdown()


def test_the_client_takes_its_address_from_the_environment_only(monkeypatch):
    monkeypatch.delenv("MOCKWORLD_WORLD_URL", raising=False)
    with pytest.raises(RuntimeError, match="MOCKWORLD_WORLD_URL"):
        WorldClient.from_env()
    monkeypatch.setenv("MOCKWORLD_WORLD_URL", "http://world:11438/")
    monkeypatch.setenv("MOCKWORLD_WORLD_AUTH", "secret")
    assert WorldClient.from_env() == WorldClient("http://world:11438", "secret")


def test_the_launch_overrides_compose_with_verls_grpo_trainer_config():
    from pathlib import Path

    import verl
    from hydra import compose, initialize_config_dir
    from verl.utils.import_utils import resolve_config_path

    lines = Path(mockworld_verl.config_path("grpo.overrides")).read_text().splitlines()
    overrides = [line for line in lines if line.strip() and not line.startswith("#")]
    overrides += ["data.train_files=out/verl.parquet", "actor_rollout_ref.model.path=Qwen/Qwen3-8B"]
    repository = Path(mockworld_verl.__file__).resolve().parents[3]
    cwd = Path.cwd()
    os.chdir(repository)  # the paths in the file are relative to the repository root, as verl resolves them
    try:
        with initialize_config_dir(str(Path(verl.__file__).parent / "trainer" / "config"), version_base=None):
            config = compose(config_name="ppo_trainer", overrides=overrides)
        rollout = config.actor_rollout_ref.rollout
        assert resolve_config_path(rollout.agent.agent_loop_config_path) == mockworld_verl.config_path("agent_loop.yaml")
        assert resolve_config_path(rollout.multi_turn.tool_config_path) == mockworld_verl.config_path("tool_config.yaml")
        assert Path(config.reward.custom_reward_function.path).resolve() == Path(mockworld_verl.reward.__file__)
    finally:
        os.chdir(cwd)
    assert (config.algorithm.adv_estimator, rollout.n, rollout.multi_turn.enable) == ("grpo", 16, True)
    assert (config.actor_rollout_ref.actor.clip_ratio_low, config.actor_rollout_ref.actor.clip_ratio_high) == (0.2, 0.28)
