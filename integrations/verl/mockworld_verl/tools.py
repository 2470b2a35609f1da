"""verl tools that answer from the mock world: a task's own tools and `ask_user`.

verl calls a `BaseTool` with the trajectory's `agent_data`; the mockworld agent loop hangs the
trajectory's world session on it (`agent_data.mockworld`) and names each call's place in the
trajectory (turn, index in the turn) through `CURRENT_CALL`, so each request id is a function of the
trajectory and its turn: a retried request, or a replayed trajectory, pays for nothing twice.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Optional
from uuid import uuid4

from pydantic import ValidationError
from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from .world_client import WorldClient

ASK_USER = "ask_user"


@dataclass(frozen=True)
class CallSlot:
    """Where a tool call sits in its trajectory: the assistant turn that made it, its index there."""

    turn: int
    index: int


CURRENT_CALL: contextvars.ContextVar[CallSlot] = contextvars.ContextVar("mockworld_current_call")


@dataclass
class Trajectory:
    """One trajectory's world session: the client, the session, and the key its request ids derive from."""

    client: WorldClient
    key: str
    session_id: str = ""
    user_stopped: bool = False
    problems: list[str] = field(default_factory=list)

    def request_id(self, suffix: str) -> str:
        return f"{self.key}-{suffix}"


def trajectory_key(run_id: str, uid: str, slot: int) -> str:
    """A trajectory's key: the training run, verl's prompt uid and the rollout's slot among its group."""
    digest = hashlib.sha256(f"{run_id}\0{uid}\0{slot}".encode("utf-8")).hexdigest()[:32]
    return f"vt-{digest}"


def trajectory_of(kwargs: dict[str, Any]) -> Trajectory:
    agent_data = kwargs.get("agent_data")
    trajectory = getattr(agent_data, "mockworld", None)
    if trajectory is None:
        raise RuntimeError("mockworld tools answer inside the mockworld_agent loop (agent_name: mockworld_agent)")
    return trajectory


def call_suffix(kind: str) -> str:
    slot = CURRENT_CALL.get(None)
    if slot is None:
        raise RuntimeError("a mockworld tool call outside the mockworld_agent loop has no place in a trajectory")
    return f"{kind}-t{slot.turn}-c{slot.index}"


def pydantic_schema(raw: dict[str, Any]) -> OpenAIFunctionToolSchema:
    """verl's schema object for a tool (it needs the name); the raw dict stays what the model sees.

    verl's OpenAIFunctionToolSchema keeps only type/description/enum of each property (nested objects,
    items, formats are dropped) and refuses some valid JSON Schemas: then only the name and the
    description go into it. It is never rendered: the loop hands the chat template the raw dict.
    """
    try:
        return OpenAIFunctionToolSchema.model_validate(raw)
    except ValidationError:
        function = raw.get("function", {})
        return OpenAIFunctionToolSchema.model_validate(
            {
                "type": "function",
                "function": {"name": function["name"], "description": function.get("description", "")},
            }
        )


class _WorldBaseTool(BaseTool):
    """A tool whose schema is a task's own (raw dict kept whole); no state of its own per trajectory."""

    def __init__(
        self, config: Optional[dict], tool_schema: Optional[OpenAIFunctionToolSchema], raw_schema: Optional[dict] = None
    ):
        # Not BaseTool.__init__: it prints every schema, and this loop builds each row's tools per trajectory.
        self.config = config or {}
        if raw_schema is None:
            if tool_schema is None:
                raise ValueError("a mockworld tool needs its schema")
            raw_schema = tool_schema.model_dump(exclude_unset=True, exclude_none=True)
        self.raw_schema = raw_schema
        self.tool_schema = tool_schema or pydantic_schema(raw_schema)
        self.name = self.tool_schema.function.name

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> "_WorldBaseTool":
        return cls(config={}, tool_schema=pydantic_schema(raw), raw_schema=raw)

    async def create(self, instance_id: Optional[str] = None, **kwargs) -> tuple[str, ToolResponse]:
        return instance_id or uuid4().hex, ToolResponse()


class WorldTool(_WorldBaseTool):
    """One of the task's tools: the world answers (its mapping, else the tool simulator, stored once)."""

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs) -> tuple[ToolResponse, float, dict]:
        trajectory = trajectory_of(kwargs)
        answer = await trajectory.client.call_tool(
            trajectory.session_id, self.name, trajectory.request_id(call_suffix("tool")), parameters
        )
        problem = answer.get("problem")
        if problem:
            trajectory.problems.append(problem)
        return ToolResponse(text=answer["content"]), 0.0, ({"problem": problem} if problem else {})


class AskUserTool(_WorldBaseTool):
    """`ask_user`: the simulated user answers from the task's hidden context (verl 0.8 has no interactions)."""

    async def execute(self, instance_id: str, parameters: dict[str, Any], **kwargs) -> tuple[ToolResponse, float, dict]:
        trajectory = trajectory_of(kwargs)
        question = parameters.get("question")
        if not isinstance(question, str) or not question.strip():
            return ToolResponse(text='ask_user needs {"question": "<what to ask the user>"}'), 0.0, {}
        answer = await trajectory.client.ask_user(
            trajectory.session_id, trajectory.request_id(call_suffix("ask")), question
        )
        if answer.get("stop"):
            trajectory.user_stopped = True
        return ToolResponse(text=answer["answer"]), 0.0, {}


def tools_of(raw_tools: list[dict[str, Any]]) -> list[_WorldBaseTool]:
    """A row's tools from the task's own schemas: `ask_user` to the user, every other name to the world."""
    return [
        (AskUserTool if raw["function"]["name"] == ASK_USER else WorldTool).from_raw(raw) for raw in raw_tools
    ]


def json_field(value: Any, default: Any) -> Any:
    """A Parquet row's JSON column (a string there, an object in verl.jsonl), parsed."""
    if value is None:
        return default
    if isinstance(value, (str, bytes)):
        return json.loads(value)
    return value
