"""The `mockworld_agent` loop: verl's tool agent loop, played in the mock world and judged by it.

verl instantiates one loop per trajectory (`agent_name` of a `verl.parquet` row). This loop
- builds the row's tools from the task's own schemas (`extra_info.tools`) and hands the chat
  template the raw schema dicts, nested parts intact (verl's `OpenAIFunctionToolSchema` would drop
  them);
- opens a world session for the trajectory, whose tools call the world service (`tools.py`);
- leaves tokenization and the response mask to verl (tool and user answers arrive as tool messages,
  mask 0; only the policy's own tokens are 1);
- judges the finished transcript through the service, R = I(no forbidden) * mean(fractions): the
  reward is the judge's verdict (`reward_score`), its parts go to `reward_extra_info`, and a judge
  that fails is an error, never a score.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, register
from verl.experimental.agent_loop.tool_agent_loop import AgentData, AgentState, ToolAgentLoop
from verl.experimental.agent_loop.tool_parser import FunctionCall

from .tools import CURRENT_CALL, CallSlot, Trajectory, json_field, tools_of, trajectory_key
from .world_client import WorldClient

AGENT_NAME = "mockworld_agent"
RUN_ID_ENV = "MOCKWORLD_VERL_RUN_ID"

# The slot of each trajectory among the rollouts of one prompt (verl's `uid`) in this process:
# rollouts of a prompt start in order, so the k-th to start is slot k. With the run id and the uid
# it keys the trajectory's request ids. Only recent uids are remembered (a uid's rollouts start
# together), so a long run's memory stays flat.
_slots: dict[str, itertools.count] = {}
_slots_lock = threading.Lock()
_SLOTS_KEPT = 65_536


def _next_slot(uid: str) -> int:
    with _slots_lock:
        if uid not in _slots and len(_slots) >= _SLOTS_KEPT:
            del _slots[next(iter(_slots))]
        return next(_slots.setdefault(uid, itertools.count()))


@register(AGENT_NAME)
class MockworldAgentLoop(ToolAgentLoop):
    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        extra_info = dict(kwargs.get("extra_info") or {})
        task_id = extra_info.get("task_id")
        if not task_id:
            raise ValueError("a mockworld_agent row needs extra_info.task_id (mockworld export --format verl-parquet)")
        # Before the first await: the slot follows the order verl starts the group's rollouts in.
        uid = str(kwargs.get("uid") or uuid4().hex)
        trajectory = Trajectory(
            client=WorldClient.from_env(),
            key=trajectory_key(os.environ.get(RUN_ID_ENV, "verl"), uid, _next_slot(uid)),
        )
        opened = await trajectory.client.open_session(trajectory.request_id("open"), task_id)
        trajectory.session_id = opened["session_id"]
        self._trajectory = trajectory

        raw_tools = json_field(extra_info.get("tools"), None) or opened["tools"]
        row_tools = tools_of(raw_tools)
        # The task's tools in its order; tools configured in verl's tool config (tool_config_path)
        # stay available after them, unless the task has one of that name.
        tools = {tool.name: tool for tool in row_tools}
        for name, tool in self.tools.items():
            tools.setdefault(name, tool)
        self.tools = tools
        self.tool_schemas = [getattr(tool, "raw_schema", None) or self._dumped(tool) for tool in tools.values()]
        extra_info.pop("tool_selection", None)
        kwargs["extra_info"] = extra_info
        kwargs["tools_kwargs"] = json_field(kwargs.get("tools_kwargs"), {})

        output = await super().run(sampling_params, **kwargs)

        messages = openai_messages(self._transcript())
        verdict = await trajectory.client.judge(trajectory.session_id, trajectory.request_id("judge"), messages)
        await trajectory.client.close(trajectory.session_id, trajectory.request_id("close"))
        output.reward_score = float(verdict["reward"])
        output.extra_fields["reward_extra_info"] = reward_parts(verdict)
        output.extra_fields["mockworld"] = {
            "session_id": trajectory.session_id,
            "task_id": task_id,
            "reward": output.reward_score,
            "problems": list(trajectory.problems),
            "user_stopped": trajectory.user_stopped,
        }
        return output

    def _transcript(self) -> list[dict[str, Any]]:
        """The messages, with the last generation when verl ended the trajectory before recording it
        (turn limit): the judge grades what the policy said."""
        agent_data = self._agent_data
        messages = list(agent_data.messages)
        if sum(m.get("role") == "assistant" for m in messages) < agent_data.assistant_turns:
            messages.append({"role": "assistant", "content": self.tokenizer.decode(agent_data.response_ids)})
        return messages

    @staticmethod
    def _dumped(tool: Any) -> dict[str, Any]:
        return tool.tool_schema.model_dump(exclude_unset=True, exclude_none=True)

    async def _handle_pending_state(self, agent_data: AgentData, sampling_params: dict[str, Any]) -> AgentState:
        # The trajectory's state, where the tools find it and where run() reads the transcript back.
        agent_data.mockworld = self._trajectory
        self._agent_data = agent_data
        return await super()._handle_pending_state(agent_data, sampling_params)

    async def _handle_processing_tools_state(self, agent_data: AgentData) -> AgentState:
        state = await super()._handle_processing_tools_state(agent_data)
        # The simulated user ended the conversation: the trajectory ends with its answer.
        return AgentState.TERMINATED if self._trajectory.user_stopped else state

    async def _call_tool(self, tool_call: FunctionCall, tools_kwargs: dict[str, Any], agent_data: AgentData):
        index = next(i for i, call in enumerate(agent_data.tool_calls) if call is tool_call)
        token = CURRENT_CALL.set(CallSlot(turn=agent_data.assistant_turns, index=index))
        try:
            return await super()._call_tool(tool_call, tools_kwargs, agent_data)
        finally:
            CURRENT_CALL.reset(token)


def reward_parts(verdict: dict[str, Any]) -> dict[str, float]:
    """The verdict's parts for verl's reward metrics (same keys on every row; NaN where a rubric has no part)."""
    fraction = lambda key: float("nan") if verdict.get(key) is None else float(verdict[key])  # noqa: E731
    return {
        "world_reward": float(verdict["reward"]),
        "sub_goal_fraction": fraction("sub_goal_fraction"),
        "interaction_fraction": fraction("interaction_fraction"),
        "forbidden_violated": float(bool(verdict["forbidden_violated"])),
    }


def openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """verl's transcript as OpenAI chat messages for the judge.

    verl keeps a call's arguments as a dict and its id only when the model wrote one, and its tool
    messages answer the calls in order: here every call gets an id (its own, else its turn and
    index), its arguments as JSON text, and every tool message the id of the call it answers.
    """
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    turn = 0
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            turn += 1
            converted: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
            calls = []
            for index, call in enumerate(message.get("tool_calls") or []):
                function = call["function"]
                arguments = function.get("arguments", {})
                calls.append(
                    {
                        "id": call.get("id") or f"call-{turn}-{index}",
                        "type": "function",
                        "function": {
                            "name": function["name"],
                            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                        },
                    }
                )
            if calls:
                converted["tool_calls"] = calls
            pending = [call["id"] for call in calls]
            out.append(converted)
        elif role == "tool":
            call_id = message.get("tool_call_id") or (pending.pop(0) if pending else f"call-{turn}-orphan")
            if message.get("tool_call_id") in pending:
                pending.remove(message["tool_call_id"])
            out.append({"role": "tool", "tool_call_id": call_id, "content": _text(message.get("content"))})
        else:
            out.append({"role": role, "content": _text(message.get("content"))})
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)
