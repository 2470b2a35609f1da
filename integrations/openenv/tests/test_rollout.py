"""The rollout's parts that need no world: actions from text, transcripts, the tiny policy."""

from __future__ import annotations

from mockworld_openenv.rollout import action_of, env_reward, render
from tiny_policy import tiny_policy


def test_tool_calls_in_hermes_form_become_the_step_action():
    text = 'Let me look. <tool_call>{"name": "lookup_record", "arguments": {"id": "R-0"}}</tool_call>'
    assert action_of(text) == {"content": text, "tool_calls": [{"name": "lookup_record", "arguments": {"id": "R-0"}}]}


def test_text_without_a_readable_tool_call_is_the_final_answer():
    assert action_of("Record R-0 is fixed.") == {"content": "Record R-0 is fixed."}
    broken = "<tool_call>{not json}</tool_call>"
    assert action_of(broken) == {"content": broken}


def test_transcripts_end_where_the_assistant_speaks_next():
    text = render([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}], [{"function": {"name": "f"}}])
    assert text == "tools: f\nsystem: s\nuser: u\nassistant:"


def test_the_reward_is_the_worlds():
    assert env_reward(["a", "b"], [1, 0.25]) == [1.0, 0.25]


def test_the_tiny_policy_round_trips_text():
    _, tokenizer = tiny_policy()
    ids = tokenizer("ask_user: {R-0}", add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == "ask_user: {R-0}"
