"""The policy endpoint: OpenAI responses, tool calls, weight sync after trainer steps, seeded sampling."""

from __future__ import annotations

import gc
import json
import re
import shutil
import threading
import urllib.error
import urllib.request
import weakref

import pytest
import torch
from trainer_data import TINY, make_pretrained_dir, rollout_batch, transcript, write_jsonl

from mockworld_trainer import policy_server
from mockworld_trainer.serving import forced_calls, pool
from mockworld_trainer.config import parse_model_spec
from mockworld_trainer.model import ByteTokenizer, ChatTemplateTokenizer, load_tokenizer
from mockworld_trainer.serving.app import PolicyServer
from mockworld_trainer.serving.tool_calls import parse_tool_calls

TINY_SPEC = parse_model_spec(TINY)
TOOLS = [
    {"type": "function", "function": {"name": "get_logs", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "rollback", "parameters": {"type": "object"}}},
]
ASK = [{"role": "system", "content": "You are an SRE agent."}, {"role": "user", "content": "Checkout 500s. Fix?"}]
END = ByteTokenizer.END


def call(server: PolicyServer, path: str, body: dict | None = None) -> tuple[int, dict, dict]:
    """(status, headers, JSON body) of one HTTP request to the server."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(server.url + path, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, json.loads(e.read())


def chat(server: PolicyServer, **body) -> tuple[int, dict, dict]:
    return call(server, "/chat/completions", {"model": "policy", "messages": ASK, **body})


@pytest.fixture
def serve(store):
    """Starts policy servers on free ports against the test's checkpoint dir; closes them afterwards."""
    started = []

    def start(run_id: str = "run-1", base=TINY_SPEC) -> PolicyServer:
        server = PolicyServer(run_id, base=base, store=store, device=torch.device("cpu"), port=0, reload_interval_s=0.5)
        started.append(server.start())
        return server

    yield start
    for server in started:
        server.close()


def scripted(monkeypatch, text: str) -> list[int]:
    """Makes generation return ``text`` in the byte layout followed by the end-of-turn token."""
    ids = [*text.encode(), END]
    monkeypatch.setattr(forced_calls, "generate", lambda *a, **k: (list(ids), "stop"))
    return ids


# --- responses -----------------------------------------------------------------------------------------


def test_a_chat_completion_is_a_valid_openai_response_with_real_usage(serve):
    server = serve()
    status, headers, out = chat(server, max_tokens=16, seed=3)
    assert status == 200 and headers["x-policy-version"] == "0"
    assert out["object"] == "chat.completion" and out["id"].startswith("chatcmpl-") and out["model"] == "policy"
    assert out["system_fingerprint"] == "step-0" and out["policy_version"] == 0
    (choice,) = out["choices"]
    assert choice["index"] == 0 and choice["message"]["role"] == "assistant"
    assert isinstance(choice["message"]["content"], str) and "tool_calls" not in choice["message"]
    assert choice["finish_reason"] in ("stop", "length")
    prompt = ByteTokenizer().generation_prompt(ASK)
    usage = out["usage"]
    assert usage["prompt_tokens"] == len(prompt) and 1 <= usage["completion_tokens"] <= 16
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    if choice["finish_reason"] == "length":
        assert usage["completion_tokens"] == 16

    status, headers, models = call(server, "/models")
    assert status == 200 and headers["x-policy-version"] == "0"
    assert models["object"] == "list"
    assert models["data"][0]["id"] == "policy" and models["data"][0]["policy_version"] == 0


def test_bad_requests_name_every_bad_field_and_unknown_models_are_404(serve):
    server = serve()
    status, _, out = call(
        server,
        "/chat/completions",
        {"messages": [{"role": "robot", "content": "hi"}], "n": 0, "stream": True, "top_p": 0, "tools": [{}]},
    )
    assert status == 400 and out["error"]["type"] == "invalid_request_error"
    for path in ("messages[0].role", "tools[0]", "top_p", "n:", "stream"):
        assert path in out["error"]["message"]
    status, _, out = chat(server, model="gpt-4o")
    assert status == 404 and out["error"]["code"] == "model_not_found"
    assert call(server, "/completions", {})[0] == 404


# --- tool calls ---------------------------------------------------------------------------------------


def test_a_tool_call_in_the_byte_layout_maps_to_tool_calls_and_trains_on_the_same_tokens(serve, monkeypatch):
    server = serve()
    text = 'Checking logs.\n<tool_call>{"arguments": "{\\"svc\\": \\"checkout\\"}", "name": "get_logs"}</tool_call>'
    ids = scripted(monkeypatch, text)
    status, _, out = chat(server, tools=TOOLS, seed=1)
    assert status == 200
    (choice,) = out["choices"]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["content"] == "Checking logs."
    (tc,) = message["tool_calls"]
    assert re.fullmatch(r"call_[0-9a-f]{24}", tc["id"]) and tc["type"] == "function"
    assert tc["function"] == {"name": "get_logs", "arguments": '{"svc": "checkout"}'}
    assert out["usage"]["completion_tokens"] == len(ids)
    # The trainer's encoding of the transcript with this reply is exactly prompt + sampled tokens, all trained.
    enc = ByteTokenizer().encode([*ASK, message], TOOLS)
    prompt = ByteTokenizer().generation_prompt(ASK, TOOLS)
    assert enc.input_ids == prompt + ids
    assert enc.loss_mask == [0] * len(prompt) + [1] * len(ids)
    assert chat(server, tools=TOOLS, seed=1)[2]["choices"][0]["message"]["tool_calls"][0]["id"] == tc["id"]


def test_qwen_style_calls_with_object_arguments_and_several_calls_map_to_tool_calls(serve, monkeypatch):
    server = serve()
    scripted(
        monkeypatch,
        '<tool_call>\n{"name": "get_logs", "arguments": {"svc": "checkout"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "rollback"}\n</tool_call>',
    )
    _, _, out = chat(server, tools=TOOLS)
    message = out["choices"][0]["message"]
    assert out["choices"][0]["finish_reason"] == "tool_calls" and message["content"] is None
    assert [c["function"] for c in message["tool_calls"]] == [
        {"name": "get_logs", "arguments": '{"svc": "checkout"}'},
        {"name": "rollback", "arguments": "{}"},
    ]
    assert len({c["id"] for c in message["tool_calls"]}) == 2


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "delete_prod", "arguments": {}}</tool_call>',  # not one of the tools
        '<tool_call>{"name": "get_logs", "arguments": {}</tool_call>',  # not JSON
        '<tool_call>{"name": "get_logs", "arguments": {}}</tool_call> and then some',  # text after the call
        '<tool_call>{"name": "get_logs", "arguments": {}}',  # unterminated
        '<tool_call>{"name": "get_logs", "arguments": [1]}</tool_call>',  # arguments not an object
        '<tool_call>{"name": "get_logs", "arguments": "not json"}</tool_call>',
        '<tool_call>{"name": "get_logs", "args": {}}</tool_call>',  # unknown key
        "\x00\x7f\ufffd<tool_call></tool_call>",
        '<tool_call>{"name": ["get_logs"]}</tool_call>',  # a name that is not a string
        "<tool_call>" + "[" * 100_000 + "</tool_call>",  # nesting too deep for the JSON parser
    ],
    ids=["unknown-tool", "bad-json", "text-after", "unterminated", "array-args", "string-args-not-json",
         "unknown-key", "junk", "name-not-string", "deep-nesting"],
)
def test_output_that_is_not_a_clean_tool_call_is_returned_as_content(text):
    assert parse_tool_calls(text, frozenset({"get_logs"})) is None


def test_junk_and_calls_without_tools_come_back_as_content(serve, monkeypatch):
    server = serve()
    junk = "\x00\x1b\ufffd<tool_call>{oops"
    scripted(monkeypatch, junk)
    _, _, out = chat(server, tools=TOOLS)
    assert out["choices"][0]["message"]["content"] == junk and out["choices"][0]["finish_reason"] == "stop"
    text = '<tool_call>{"name": "get_logs"}</tool_call>'
    scripted(monkeypatch, text)
    for extra in ({}, {"tools": TOOLS, "tool_choice": "none"}):  # no tools offered, or calls turned off
        _, _, out = chat(server, **extra)
        assert out["choices"][0]["message"] == {"role": "assistant", "content": text, "refusal": None}
        assert out["choices"][0]["finish_reason"] == "stop"


def test_a_required_tool_call_is_opened_for_the_policy_which_samples_the_rest(serve, monkeypatch):
    server = serve()
    prompts = []

    def generate(served, prompt, *rest, stop_text=None):
        prompts.append(list(prompt))
        assert stop_text == "</tool_call>"  # the forced call ends at its closing tag
        return [*'{}, "name": "get_logs"}</tool_call>'.encode(), END], "stop"

    monkeypatch.setattr(forced_calls, "generate", generate)
    status, _, out = chat(server, tools=TOOLS, tool_choice="required")
    opening = '\n<tool_call>{"arguments": '
    assert status == 200 and bytes(prompts[0][-len(opening) :]) == opening.encode()
    choice = out["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    assert [c["function"] for c in choice["message"]["tool_calls"]] == [{"name": "get_logs", "arguments": "{}"}]
    generated = len('{}, "name": "get_logs"}</tool_call>') + 1
    assert out["usage"] == {
        "prompt_tokens": len(prompts[0]) - len(opening),
        "completion_tokens": len(opening) + generated,
        "total_tokens": len(prompts[0]) + generated,
    }


@pytest.mark.parametrize(
    ("extra", "param", "message"),
    [
        ({"tool_choice": "required"}, "tool_choice", "'required' needs tools"),
        ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "deploy"}}},
         "tool_choice.function.name", "'deploy' is not one of the request's tools"),
        ({"tools": TOOLS, "tool_choice": "any"}, "tool_choice", "expected 'auto', 'none', 'required'"),
        # The byte layout writes the arguments before the name: a named choice cannot be opened.
        ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "rollback"}}},
         "tool_choice", "cannot fix the function name"),
    ],
    ids=["required-without-tools", "unknown-function", "unknown-choice", "named-on-byte-layout"],
)
def test_a_tool_choice_that_cannot_be_honoured_is_a_400_naming_it(serve, extra, param, message):
    status, _, out = chat(serve(), **extra)
    assert status == 400 and out["error"]["param"] == param and message in out["error"]["message"]


def test_the_hermes_opening_of_a_named_call_is_how_the_trainer_writes_that_call(tmp_path):
    from mockworld_trainer.model import with_tools_as_text

    spec = parse_model_spec({"kind": "pretrained", "path": str(make_pretrained_dir(tmp_path / "base"))})
    tok = load_tokenizer(spec)
    assert isinstance(tok, ChatTemplateTokenizer)
    opening = tok.tool_call_opening("rollback")
    call = {"id": "c1", "type": "function", "function": {"name": "rollback", "arguments": '{"to": "v41"}'}}
    written = with_tools_as_text([{"role": "assistant", "content": None, "tool_calls": [call]}], TOOLS)[1]["content"]
    assert written.startswith(opening) and written.startswith(tok.tool_call_opening(None))
    assert parse_tool_calls(written, frozenset({"rollback"})) == (None, [{"name": "rollback", "arguments": '{"to": "v41"}'}])


def test_a_required_call_on_a_chat_template_model_names_one_of_the_tools_and_ends_at_its_tag(serve, tmp_path):
    spec = parse_model_spec({"kind": "pretrained", "path": str(make_pretrained_dir(tmp_path / "base"))})
    server = serve("wf-required", base=spec)
    status, _, out = chat(server, tools=TOOLS, tool_choice="required", max_tokens=24, seed=3, n=6)
    assert status == 200
    tok = load_tokenizer(spec)
    openings = {name: tok.tool_call_opening(name) for name in ("get_logs", "rollback")}
    for choice in out["choices"]:  # a random model: its arguments are junk, the call is made all the same
        (call,) = choice["message"]["tool_calls"]
        assert call["function"]["name"] in openings and choice["finish_reason"] in ("tool_calls", "length")
        assert "</tool_call>" not in call["function"]["arguments"]
    named = chat(server, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "rollback"}}, seed=3)
    assert named[2]["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "rollback"


CITY_TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "description": "e.g. Paris"}}, "required": ["city"],
    }}}
    for n in ("get_weather", "find_hotels")
]


@pytest.mark.parametrize(
    ("parameters", "keys"),
    [
        (CITY_TOOLS[0]["function"]["parameters"], ("city",)),
        ({"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "string"}, "n": {"type": "integer"}},
          "required": ["a", "b"]}, ("b", "a")),  # declared order; optional ones left out
        ({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}, None),
        ({"type": "object", "properties": {"c": {"type": "string", "enum": ["x"]}}, "required": ["c"]}, None),
        ({"type": "object", "properties": {"c": {"type": "string"}}}, None),  # nothing required
        ({"type": "object"}, None),
    ],
)
def test_only_required_plain_string_arguments_are_guided(parameters, keys):
    tools = [{"type": "function", "function": {"name": "f", "parameters": parameters}}]
    assert forced_calls.guided_keys(tools, "f") == keys


def test_a_guided_call_writes_the_keys_and_the_policy_only_the_values(serve, tmp_path, monkeypatch):
    from mockworld_trainer.model import with_tools_as_text

    spec = parse_model_spec({"kind": "pretrained", "path": str(make_pretrained_dir(tmp_path / "base"))})
    server = serve("wf-guided", base=spec)
    tok = load_tokenizer(spec)
    asked = []

    def generate(served, prompt, max_new, *rest, stop_text=None):
        asked.append((tok.hf.decode(prompt[-3:]), stop_text))
        return tok.text_ids('Lisbon", "country'), "stop"  # the closing quote's token carries more text

    monkeypatch.setattr(forced_calls, "generate", generate)
    named = {"type": "function", "function": {"name": "find_hotels"}}
    status, _, out = chat(server, tools=CITY_TOOLS, tool_choice=named, max_tokens=128)
    assert status == 200 and [stop for _, stop in asked] == ['"']  # one value sampled, up to its quote
    choice = out["choices"][0]
    call = choice["message"]["tool_calls"][0]["function"]
    assert choice["finish_reason"] == "tool_calls" and call == {"name": "find_hotels", "arguments": '{"city": "Lisbon"}'}
    message = {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": call}]}
    trained = with_tools_as_text([message], CITY_TOOLS)[1]["content"]  # how the trainer writes the turn
    pieces = [tok.tool_call_opening("find_hotels"), '"city": "', "Lisbon", '"}}\n</tool_call>']
    assert "".join(pieces) == trained
    assert out["usage"]["completion_tokens"] == sum(len(tok.text_ids(p)) for p in pieces)


def test_guided_calls_of_a_random_model_always_parse_and_name_the_required_argument(serve, tmp_path):
    spec = parse_model_spec({"kind": "pretrained", "path": str(make_pretrained_dir(tmp_path / "base"))})
    server = serve("wf-guided-random", base=spec)
    status, _, out = chat(server, tools=CITY_TOOLS, tool_choice="required", max_tokens=90, seed=5, n=6)
    assert status == 200
    for choice in out["choices"]:
        (call,) = choice["message"]["tool_calls"]
        if choice["finish_reason"] == "tool_calls":
            assert list(json.loads(call["function"]["arguments"])) == ["city"]
        else:  # a value that ran past the budget: cut there, and the call is made all the same
            assert choice["finish_reason"] == "length" and call["function"]["arguments"].startswith('{"city": "')


@pytest.mark.parametrize(
    ("written", "arguments"),
    [
        ('"city": "Lisbon"}}\n</tool_call>', '{"city": "Lisbon"}'),
        ('"city": "Lisbon"}\n</tool_call>', '{"city": "Lisbon"}'),  # the call object left open
        ('"city": "Lisbon"}} and more', '{"city": "Lisbon"}'),  # cut at the length limit, no tag
        ('\n "date": Sun8P3</tool_call>', '{\n "date": Sun8P3'),  # not JSON: kept as written
    ],
)
def test_a_forced_calls_arguments_are_what_the_policy_wrote(written, arguments):
    from mockworld_trainer.serving.tool_calls import forced_call

    opening = '<tool_call>\n{"name": "get_weather", "arguments": {'
    call = forced_call(opening + written, opening, "get_weather")
    assert call == {"name": "get_weather", "arguments": arguments}


def test_a_call_openings_log_probability_from_the_cached_prompt_equals_a_full_forward_pass(serve, tmp_path):
    from mockworld_trainer.serving.forced_calls import choose_function, opening_logprobs

    spec = parse_model_spec({"kind": "pretrained", "path": str(make_pretrained_dir(tmp_path / "base"))})
    server = serve("wf-openings", base=spec)
    assert chat(server, max_tokens=1)[0] == 200  # loads the policy
    served = server.holder.served
    tok = served.policy.tokenizer
    prompt = tok.generation_prompt(ASK, TOOLS)
    openings = {n: tok.text_ids(tok.tool_call_opening(n)) for n in ("get_logs", "rollback")}

    def full(name: str) -> float:
        ids = torch.tensor([prompt + openings[name]])
        with torch.no_grad():
            logits = served.policy.model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
        return float(torch.log_softmax(logits, -1).gather(1, torch.tensor(openings[name])[:, None]).sum())

    cached = opening_logprobs(served, prompt, openings)
    assert cached == pytest.approx({n: full(n) for n in openings}, abs=1e-3)
    assert choose_function(served, prompt, openings, 0.0, None) == max(cached, key=cached.get)


def test_invalid_utf8_from_a_random_model_is_still_a_json_response(serve, monkeypatch):
    server = serve()
    monkeypatch.setattr(forced_calls, "generate", lambda *a, **k: ([0xFF, 0xC3, 0x00, 0x80, 259], "stop"))
    status, _, out = chat(server, tools=TOOLS)
    assert status == 200 and out["choices"][0]["message"]["content"] == "\ufffd\ufffd\x00\ufffd"


# --- sampling ----------------------------------------------------------------------------------------


def test_the_same_seed_gives_the_same_output_and_choice_i_uses_seed_plus_i(serve):
    server = serve()
    first = chat(server, seed=7, temperature=1.0, max_tokens=24)[2]["choices"]
    assert chat(server, seed=7, temperature=1.0, max_tokens=24)[2]["choices"] == first
    other = chat(server, seed=8, temperature=1.0, max_tokens=24)[2]["choices"]
    assert other != first
    two = chat(server, seed=7, temperature=1.0, max_tokens=24, n=2)[2]
    assert [c["message"] for c in two["choices"]] == [first[0]["message"], other[0]["message"]]
    greedy = [chat(server, temperature=0, max_tokens=12)[2]["choices"][0]["message"] for _ in range(2)]
    assert greedy[0] == greedy[1]
    nucleus = chat(server, seed=7, temperature=0.7, top_p=0.5, max_tokens=12)[2]["choices"]
    assert nucleus == chat(server, seed=7, temperature=0.7, top_p=0.5, max_tokens=12)[2]["choices"]


# --- weight sync -------------------------------------------------------------------------------------


def test_after_a_trainer_step_the_server_serves_the_new_weights_and_in_flight_requests_finish_on_the_old(
    serve, trainer, tmp_path, monkeypatch
):
    server = serve("wf-sync")
    old = server.holder.served
    before = [chat(server, seed=s, max_tokens=32)[2]["choices"] for s in range(4)]

    real_generate = forced_calls.generate
    entered, release = threading.Event(), threading.Event()

    def generate(served, *args, **kwargs):
        if served.step == 0 and not release.is_set():
            entered.set()
            release.wait(10)
        return real_generate(served, *args, **kwargs)

    monkeypatch.setattr(forced_calls, "generate", generate)
    in_flight: dict = {}
    t = threading.Thread(target=lambda: in_flight.update(out=chat(server, seed=0, max_tokens=32)))
    t.start()
    assert entered.wait(10)

    ref = write_jsonl(tmp_path / "step-1.jsonl", rollout_batch())
    applied = trainer.train_step("wf-sync", 1, ref, model=TINY, config={"lr": 1e-2})
    status, headers, after = chat(server, seed=0, max_tokens=32)
    assert status == 200 and headers["x-policy-version"] == "1"
    assert after["policy_version"] == 1 and after["system_fingerprint"] == "step-1"
    assert call(server, "/models")[2]["data"][0]["policy_version"] == 1

    new = server.holder.served
    assert new.step == 1 and new.model_path == applied["model_path"] and new.policy.model is not old.policy.model
    probe = torch.tensor([ByteTokenizer().generation_prompt(ASK)])
    with torch.no_grad():
        assert not torch.allclose(old.policy.model(probe).logits, new.policy.model(probe).logits)
    # same seeds and prompt, different weights: the sampled outputs change
    assert [chat(server, seed=s, max_tokens=32)[2]["choices"] for s in range(4)] != before

    release.set()
    t.join(10)
    status, headers, out = in_flight["out"]
    assert status == 200 and headers["x-policy-version"] == "0" and out["policy_version"] == 0
    assert out["choices"] == before[0]  # finished on the weights it started with
    assert server.holder.loads == 2  # step 0, then step 1 once


def test_a_step_whose_weights_cannot_be_loaded_keeps_the_old_policy(serve, trainer, tmp_path):
    server = serve("wf-pruned")
    trainer.train_step("wf-pruned", 1, write_jsonl(tmp_path / "b.jsonl", rollout_batch()), model=TINY)
    shutil.rmtree(trainer.store.step_dir("wf-pruned", 1) / "model")  # as if pruned under the server
    status, headers, out = chat(server, max_tokens=4)
    assert status == 200 and out["policy_version"] == 0 and headers["x-policy-version"] == "0"


def test_a_run_directory_that_already_has_steps_is_served_from_its_latest_step(trainer, serve, tmp_path):
    ref = write_jsonl(tmp_path / "b.jsonl", rollout_batch())
    trainer.train_step("wf-resume", 1, ref, model=TINY)
    server = serve("wf-resume", base=None)  # the model comes from the run's run.json
    assert server.holder.served.step == 1
    assert chat(server, max_tokens=4)[2]["policy_version"] == 1


# --- pretrained models ---------------------------------------------------------------------------------


def test_a_pretrained_model_is_prompted_with_the_trainers_chat_template_tokens(serve, tmp_path):
    spec = parse_model_spec({"kind": "pretrained", "path": str(make_pretrained_dir(tmp_path / "base"))})
    server = serve("wf-pre", base=spec)
    messages = transcript("Rolled back.")[:-1]  # ends with a tool result: the next turn is the assistant's
    status, _, out = chat(server, messages=messages, tools=TOOLS, max_tokens=8, seed=0)
    assert status == 200 and out["choices"][0]["finish_reason"] in ("stop", "length")
    tok = load_tokenizer(spec)
    assert isinstance(tok, ChatTemplateTokenizer)
    prompt = tok.generation_prompt(messages, TOOLS)
    assert out["usage"]["prompt_tokens"] == len(prompt)
    enc = tok.encode([*messages, {"role": "assistant", "content": "Rolled back."}], TOOLS)
    assert enc.input_ids[: len(prompt)] == prompt and sum(enc.loss_mask[len(prompt) :]) > 0
    assert server.holder.served.stop_ids == {tok.hf.eos_token_id}


# --- command line --------------------------------------------------------------------------------------


def test_the_command_line_builds_a_server_for_a_run(tmp_path):
    server = policy_server.server_from_args(
        ["--run-id", "cli", "--port", "0", "--base", "tiny", "--checkpoint-dir", str(tmp_path / "ckpt"),
         "--device", "cpu", "--served-model-name", "agent"]
    ).start()
    try:
        status, headers, out = call(server, "/chat/completions", {"model": "agent", "messages": ASK, "max_tokens": 4})
        assert status == 200 and headers["x-policy-version"] == "0" and out["model"] == "agent"
        assert call(server, "/models")[2]["data"][0]["id"] == "agent"
    finally:
        server.close()
    with pytest.raises(SystemExit, match="no run.json"):
        policy_server.server_from_args(["--run-id", "cli2", "--port", "0", "--checkpoint-dir", str(tmp_path)])
    with pytest.raises(SystemExit, match="not a model directory"):
        policy_server.server_from_args(["--run-id", "cli2", "--base", str(tmp_path / "nope")])


# --- many runs (--any-run) -------------------------------------------------------------------------------

CELL_B = {**TINY, "seed": 1, "hidden_size": 48, "intermediate_size": 96}  # another tiny model than cell-a's


@pytest.fixture
def serve_any(store):
    """Starts multi-run policy servers (run_id None) against the test's checkpoint dir; closes them afterwards."""
    started = []

    def start(base=None, max_loaded_runs: int = 2) -> PolicyServer:
        server = PolicyServer(
            None, base=base, store=store, device=torch.device("cpu"), port=0, max_loaded_runs=max_loaded_runs
        )
        started.append(server.start())
        return server

    yield start
    for server in started:
        server.close()


def ask(server: PolicyServer, model: str | None, **body) -> tuple[int, dict, dict]:
    return call(server, "/chat/completions", {"model": model, "messages": ASK, "max_tokens": 8, "seed": 5, **body})


def two_trained_runs(trainer, tmp_path) -> None:
    """cell-a: the tiny model, steps 1 and 2; cell-b: a wider tiny model with another seed, step 1."""
    ref = write_jsonl(tmp_path / "b.jsonl", rollout_batch())
    trainer.train_step("cell-a", 1, ref, model=TINY, config={"lr": 1e-2})
    trainer.train_step("cell-a", 2, ref, config={"lr": 1e-2})
    trainer.train_step("cell-b", 1, ref, model=CELL_B, config={"lr": 1e-2})


def loaded(server: PolicyServer) -> dict[str, object]:
    """The pool's holders by model name, least recently used first."""
    return {pool.model_name(k): h for k, h in server.pool.loaded()}


def test_one_server_serves_many_runs_by_model_name_and_pinned_steps(serve_any, trainer, tmp_path):
    two_trained_runs(trainer, tmp_path)
    server = serve_any(max_loaded_runs=4)
    status, headers, a = ask(server, "cell-a")
    assert status == 200 and headers["x-policy-version"] == "2" and headers["x-run-id"] == "cell-a"
    assert a["policy_version"] == 2 and a["system_fingerprint"] == "step-2"
    assert a["run_id"] == "cell-a" and a["model"] == "cell-a"
    status, headers, b = ask(server, "cell-b")
    assert status == 200 and headers["x-policy-version"] == "1" and headers["x-run-id"] == "cell-b"
    assert b["policy_version"] == 1 and b["run_id"] == "cell-b" and b["model"] == "cell-b"

    status, headers, a1 = ask(server, "cell-a@1")
    assert status == 200 and headers["x-policy-version"] == "1" and headers["x-run-id"] == "cell-a"
    assert a1["policy_version"] == 1 and a1["run_id"] == "cell-a" and a1["model"] == "cell-a@1"
    assert ask(server, "cell-a@2")[2]["choices"] == a["choices"]  # the newest step, pinned: the same weights
    a0 = ask(server, "cell-a@0")[2]
    assert a0["policy_version"] == 0 and a0["run_id"] == "cell-a"  # the base model recorded in run.json

    # each pinned step is served from its own weights directory; cell-b is its own (wider) model
    holders = loaded(server)
    assert list(holders) == ["cell-b", "cell-a@1", "cell-a@2", "cell-a@0"]  # 5 names, 4 slots: cell-a went
    store = trainer.store
    assert holders["cell-a@1"].served.model_path == str(store.weights_dir("cell-a", 1))
    assert holders["cell-a@2"].served.model_path == str(store.weights_dir("cell-a", 2))
    assert holders["cell-b"].served.model_path == str(store.weights_dir("cell-b", 1))
    assert holders["cell-b"].served.policy.model.config.hidden_size == 48
    assert holders["cell-a@1"].served.policy.model.config.hidden_size == 32
    probe = torch.tensor([ByteTokenizer().generation_prompt(ASK)])
    with torch.no_grad():
        logits = [holders[k].served.policy.model(probe).logits for k in ("cell-a@0", "cell-a@1", "cell-a@2")]
    assert not torch.allclose(logits[0], logits[1]) and not torch.allclose(logits[1], logits[2])

    # a newest-step name follows the run: a step applied now is what the next request gets
    trainer.train_step("cell-b", 2, write_jsonl(tmp_path / "b2.jsonl", rollout_batch()), config={"lr": 1e-2})
    status, headers, b2 = ask(server, "cell-b")
    assert status == 200 and b2["policy_version"] == 2 and headers["x-policy-version"] == "2"
    assert ask(server, "cell-b@1")[2]["choices"] == b["choices"]  # pinned: the old version, same seed, same reply

    status, headers, models = call(server, "/models")
    assert status == 200 and "x-policy-version" not in headers  # many runs: no one version
    entries = {m["id"]: m for m in models["data"]}
    assert list(entries) == ["cell-a", "cell-b"]
    assert entries["cell-a"]["run_id"] == "cell-a" and entries["cell-a"]["policy_version"] == 2
    assert entries["cell-a"]["servable_steps"] == [0, 1, 2]
    assert entries["cell-a"]["root"] == str(store.weights_dir("cell-a", 2))
    assert entries["cell-b"]["policy_version"] == 2 and entries["cell-b"]["servable_steps"] == [0, 1, 2]
    assert entries["cell-a"]["max_model_len"] == entries["cell-b"]["max_model_len"] == 16384  # loaded: known
    status, _, one = call(server, "/models/cell-b")
    assert status == 200 and one == entries["cell-b"]
    assert call(server, "/models/cell-c")[0] == 404
    status, _, health = call(server, "/health")
    assert status == 200 and health["mode"] == "multi-run" and health["max_loaded_runs"] == 4
    assert {h["model"]: h["policy_version"] for h in health["loaded"]} == {
        "cell-a@2": 2, "cell-a@0": 0, "cell-b": 2, "cell-b@1": 1  # cell-b@1 took the place of cell-a@1
    }


def test_unknown_runs_and_missing_steps_are_404s_that_name_what_exists(serve_any, trainer, tmp_path):
    two_trained_runs(trainer, tmp_path)
    server = serve_any()  # no --base: a run that is not on disk is unknown
    status, headers, out = ask(server, "cell-c")
    assert status == 404 and out["error"]["code"] == "model_not_found" and out["error"]["param"] == "model"
    assert "'cell-c'" in out["error"]["message"] and "'cell-a', 'cell-b'" in out["error"]["message"]
    assert "x-policy-version" not in headers
    for name in ("policy", "cell-a@", "."):  # the single-run name, an '@' without a step, an invalid run id
        status, _, out = ask(server, name)
        assert status == 404 and "'cell-a', 'cell-b'" in out["error"]["message"], name
    status, _, out = ask(server, "cell-a@3")
    assert status == 404 and "has not applied step 3; its applied steps are 1..2" in out["error"]["message"]
    shutil.rmtree(trainer.store.step_dir("cell-a", 1) / "model")  # pruned by retention, say
    status, _, out = ask(server, "cell-a@1")
    assert status == 404 and "no longer on disk" in out["error"]["message"]
    assert "steps with weights: 0, 2" in out["error"]["message"]
    status, _, out = ask(server, None)
    assert status == 400 and out["error"]["param"] == "model" and "'cell-a', 'cell-b'" in out["error"]["message"]
    assert server.pool.created == 0  # nothing was loaded for any of them
    assert ask(server, "cell-a")[0] == 200 and ask(server, "cell-a@2")[0] == 200


def test_with_base_a_run_without_run_json_is_served_at_step_0(serve_any, store):
    store.ensure_manifest("cell-b", {"run_id": "cell-b", "model": CELL_B})  # as the trainer writes it before step 1
    server = serve_any(base=TINY_SPEC, max_loaded_runs=3)
    status, headers, out = ask(server, "not-stepped-yet")
    assert status == 200 and out["policy_version"] == 0 and out["run_id"] == "not-stepped-yet"
    assert headers["x-policy-version"] == "0" and headers["x-run-id"] == "not-stepped-yet"
    assert ask(server, "not-stepped-yet@0")[2]["choices"] == out["choices"]
    status, _, out = ask(server, "not-stepped-yet@1")
    assert status == 404 and "has no applied step yet" in out["error"]["message"]
    assert ask(server, "cell-b")[2]["policy_version"] == 0
    holders = loaded(server)
    assert holders["not-stepped-yet"].served.policy.model.config.hidden_size == 32  # --base
    assert holders["cell-b"].served.policy.model.config.hidden_size == 48  # a run.json: the run's own model
    assert [m["id"] for m in call(server, "/models")[2]["data"]] == ["cell-b"]  # only runs on disk are listed


def test_at_most_max_loaded_runs_are_loaded_least_recently_used_first_out(serve_any, store, monkeypatch):
    server = serve_any(base=TINY_SPEC, max_loaded_runs=2)
    for name in ("r1", "r2", "r3"):
        assert ask(server, name)[0] == 200
    assert list(loaded(server)) == ["r2", "r3"] and server.pool.evicted == 1
    r2 = weakref.ref(loaded(server)["r2"])
    assert ask(server, "r2")[0] == 200 and server.pool.created == 3  # still loaded: not loaded again
    assert list(loaded(server)) == ["r3", "r2"]
    assert ask(server, "r1")[0] == 200 and server.pool.created == 4  # r3 is the least recently used
    assert list(loaded(server)) == ["r2", "r1"]
    assert ask(server, "r3")[0] == 200 and list(loaded(server)) == ["r1", "r3"] and server.pool.created == 5
    gc.collect()
    assert r2() is None  # an unloaded policy is freed, not kept alive somewhere

    # A policy that is generating is never unloaded: with both slots busy, a third run waits for one.
    real_generate = forced_calls.generate
    gates = {"r1": threading.Event(), "r3": threading.Event()}
    inside = {"r1": threading.Event(), "r3": threading.Event()}
    runs = {id(h.served): k for k, h in loaded(server).items()}

    def generate(served, *args, **kwargs):
        run = runs.get(id(served))
        if run in gates:
            inside[run].set()
            gates[run].wait(10)
        return real_generate(served, *args, **kwargs)

    monkeypatch.setattr(forced_calls, "generate", generate)
    results: dict = {}
    threads = [threading.Thread(target=lambda n=n: results.update({n: ask(server, n)})) for n in ("r1", "r3")]
    for t in threads:
        t.start()
    assert inside["r1"].wait(10) and inside["r3"].wait(10)
    waiting = threading.Thread(target=lambda: results.update(r4=ask(server, "r4")))
    waiting.start()
    waiting.join(0.5)
    assert waiting.is_alive() and sorted(loaded(server)) == ["r1", "r3"] and server.pool.created == 5
    gates["r3"].set()  # r3 finishes: it is the idle one now, so r4 takes its place
    waiting.join(10)
    assert not waiting.is_alive() and results["r4"][0] == 200 and results["r4"][2]["run_id"] == "r4"
    assert list(loaded(server)) == ["r1", "r4"]
    gates["r1"].set()
    for t in threads:
        t.join(10)
    assert results["r1"][0] == results["r3"][0] == 200 and results["r3"][2]["run_id"] == "r3"


def test_concurrent_requests_to_two_runs_each_get_their_own_policy(serve_any, store):
    store.ensure_manifest("run-x", {"run_id": "run-x", "model": TINY})  # a run.json, no step yet: step 0
    store.ensure_manifest("run-y", {"run_id": "run-y", "model": CELL_B})
    server = serve_any()
    names = ["run-x", "run-y"] * 4
    expected = {(n, s): ask(server, n, seed=s)[2]["choices"] for s, n in enumerate(names)}
    assert expected[("run-x", 0)] != expected[("run-y", 1)]
    results: dict = {}
    barrier = threading.Barrier(len(names))

    def one(seed: int, name: str) -> None:
        barrier.wait(10)
        results[(name, seed)] = ask(server, name, seed=seed)

    threads = [threading.Thread(target=one, args=(s, n)) for s, n in enumerate(names)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    for (name, seed), (status, headers, out) in results.items():
        assert status == 200 and out["run_id"] == name and headers["x-run-id"] == name
        assert out["policy_version"] == 0 and out["choices"] == expected[(name, seed)]
    assert len(results) == len(names) and server.pool.created == 2  # each run loaded once, none evicted


def test_the_command_line_serves_any_run_and_keeps_the_single_run_flags_apart(tmp_path, store, trainer, capsys):
    trainer.train_step("cell", 1, write_jsonl(tmp_path / "b.jsonl", rollout_batch()), model=TINY)
    server = policy_server.server_from_args(
        ["--any-run", "--port", "0", "--checkpoint-dir", str(store.root), "--device", "cpu", "--max-loaded-runs", "1"]
    ).start()
    try:
        assert server.holder is None and server.pool is not None and server.pool.max_loaded == 1
        (entry,) = call(server, "/models")[2]["data"]
        assert entry["id"] == "cell" and entry["policy_version"] == 1 and entry["servable_steps"] == [0, 1]
        assert entry["max_model_len"] is None  # nothing loaded yet: listing loads nothing
        status, headers, out = ask(server, "cell")
        assert status == 200 and headers["x-policy-version"] == "1" and out["run_id"] == "cell"
        assert ask(server, "other")[0] == 404  # no --base: only runs on disk
    finally:
        server.close()
    for argv, message in (
        ([], "one of the arguments --run-id --any-run is required"),
        (["--run-id", "r", "--any-run"], "not allowed with"),
        (["--any-run", "--served-model-name", "p"], "--served-model-name applies to --run-id"),
        (["--run-id", "r", "--max-loaded-runs", "3"], "--max-loaded-runs applies to --any-run"),
    ):
        with pytest.raises(SystemExit):
            policy_server.server_from_args([*argv, "--port", "0", "--checkpoint-dir", str(tmp_path / "c")])
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit, match="max-loaded-runs must be >= 1"):
        policy_server.server_from_args(["--any-run", "--max-loaded-runs", "0", "--port", "0"])


def test_model_names_parse_a_trailing_step_only():
    parse = pool.parse_model_name
    assert parse("study-x-cell-rs-q4-r2-s0") == ("study-x-cell-rs-q4-r2-s0", None)
    assert parse("cell@12") == ("cell", 12) and parse("a@b@3") == ("a@b", 3)
    assert parse("cell@") == ("cell@", None) and parse("cell@x1") == ("cell@x1", None) and parse("@3") == ("@3", None)
    assert parse("cell@\u0663") == ("cell@\u0663", None)  # ASCII digits only


def _sample(text: str, name: str, **labels: str) -> float:
    """The value of one series of a Prometheus text exposition, summed over matching label sets."""
    total = 0.0
    for line in text.splitlines():
        match = re.match(r"^([a-zA-Z_:][\w:]*)(\{.*\})?\s+(\S+)$", line)
        if match and match[1] == name and all(f'{k}="{v}"' in (match[2] or "") for k, v in labels.items()):
            total += float(match[3])
    return total


def test_metrics_count_requests_by_route_and_outcome_tokens_and_weight_loads(serve):
    server = serve()

    def scrape() -> str:
        with urllib.request.urlopen(server.url.removesuffix("/v1") + "/metrics") as response:
            assert response.headers["Content-Type"].startswith("text/plain")
            return response.read().decode()

    before = scrape()
    _, _, out = chat(server, max_tokens=8, seed=1)
    assert call(server, "/chat/completions", {"model": "policy"})[0] == 400  # no messages
    after = scrape()

    def delta(name: str, **labels: str) -> float:
        return _sample(after, name, **labels) - _sample(before, name, **labels)

    assert delta("mockworld_policy_request_duration_seconds_count", route="chat", outcome="ok") == 1
    assert delta("mockworld_policy_request_duration_seconds_count", route="chat", outcome="client_error") == 1
    assert delta("mockworld_policy_tokens_total", kind="prompt") == out["usage"]["prompt_tokens"]
    assert delta("mockworld_policy_tokens_total", kind="completion") == out["usage"]["completion_tokens"]
    assert _sample(after, "mockworld_policy_weight_loads_total") >= 1  # the server loaded step 0
    assert "policy" not in re.findall(r'route="(\w+)"', after)  # model names stay out of the labels
