"""Transcript tokenization: the loss mask is 1 exactly on what the assistant generated."""

from __future__ import annotations

import json

import pytest
import torch
from trainer_data import TINY, byte_level_hf_tokenizer, make_pretrained_dir, transcript

from mockworld_trainer.config import parse_model_spec
from mockworld_trainer.errors import BadRequestError
from mockworld_trainer.model import ByteTokenizer, ChatTemplateTokenizer, load_model, load_tokenizer


def _segments(ids, mask, decode):
    out = []
    for i, m in zip(ids, mask, strict=False):
        if not out or out[-1][0] != m:
            out.append((m, []))
        out[-1][1].append(i)
    return [(m, decode(s)) for m, s in out]


def test_the_byte_tokenizer_masks_in_exactly_the_assistant_text_and_its_end_token():
    tok = ByteTokenizer()
    enc = tok.encode(transcript("Rolled back v2.1."))
    generated = [i for i, m in zip(enc.input_ids, enc.loss_mask, strict=False) if m]
    first = 'Checking logs.\n<tool_call>{"arguments": "{\\"svc\\":\\"checkout\\"}", "name": "get_logs"}</tool_call>'
    assert tok.decode(generated) == first + "Rolled back v2.1."
    assert generated.count(ByteTokenizer.END) == 2  # each assistant turn's end token is generated
    assert sum(enc.loss_mask) == len((first + "Rolled back v2.1.").encode()) + 2
    role_positions = [p for p, i in enumerate(enc.input_ids) if i == ByteTokenizer.ROLE_IDS["assistant"]]
    assert all(enc.loss_mask[p] == 0 for p in role_positions)  # the assistant header is the prompt


def test_the_chat_template_tokenizer_finds_assistant_tokens_by_prefix_differences():
    hf = byte_level_hf_tokenizer()
    enc = ChatTemplateTokenizer(hf).encode(
        transcript("Rolled back."), tools=[{"type": "function", "function": {"name": "get_logs"}}]
    )
    segments = _segments(enc.input_ids, enc.loss_mask, hf.decode)
    assert [m for m, _ in segments] == [0, 1, 0, 1, 0]
    assert segments[1][1] == 'Checking logs.\n<tool_call>get_logs {"svc":"checkout"}</tool_call><|im_end|>'
    assert segments[3][1] == "Rolled back.<|im_end|>"
    assert segments[2][1] == "\n<|im_start|>tool\nOOM after v2.1 deploy<|im_end|>\n<|im_start|>assistant\n"
    assert segments[4][1] == "\n"  # the template's newline after <|im_end|> was not generated
    full = hf.apply_chat_template(
        transcript("Rolled back."), tools=[{"type": "function", "function": {"name": "get_logs"}}], tokenize=False
    )
    assert hf.decode(enc.input_ids) == full


def test_a_template_that_rewrites_earlier_turns_is_refused():
    hf = byte_level_hf_tokenizer()
    hf.chat_template = "{{ messages | length }}{% for m in messages %}{{ m.content }}{% endfor %}"
    with pytest.raises(BadRequestError, match="not prefix-stable"):
        ChatTemplateTokenizer(hf).encode(transcript("ok"))


def test_a_tiny_model_is_deterministic_per_seed_and_leaves_the_global_rng_alone():
    spec = parse_model_spec(TINY)
    torch.manual_seed(123)
    before = torch.rand(1)
    a, b = load_model(spec, None, torch.device("cpu")), load_model(spec, None, torch.device("cpu"))
    torch.manual_seed(123)
    assert torch.rand(1) == before
    for pa, pb in zip(a.parameters(), b.parameters(), strict=False):
        assert torch.equal(pa, pb)
    other = load_model(parse_model_spec({**TINY, "seed": 1}), None, torch.device("cpu"))
    assert not torch.equal(next(a.parameters()), next(other.parameters()))


def test_a_pretrained_directory_loads_offline_with_its_chat_template(tmp_path):
    spec = parse_model_spec({"kind": "pretrained", "path": str(make_pretrained_dir(tmp_path / "base"))})
    model = load_model(spec, None, torch.device("cpu"))
    tok = load_tokenizer(spec)
    assert isinstance(tok, ChatTemplateTokenizer) and model.config.vocab_size == 264
    enc = tok.encode(transcript("Rolled back."))
    logits = model(input_ids=torch.tensor([enc.input_ids])).logits
    assert logits.shape == (1, len(enc.input_ids), 264)
    with pytest.raises(BadRequestError, match="cannot load"):
        load_model(
            parse_model_spec({"kind": "pretrained", "path": str(tmp_path / "missing")}), None, torch.device("cpu")
        )


# --- a chat template that does not render tools -----------------------------------------------------

PLAIN_CHATML = (
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
TOOLS = [{"type": "function", "function": {"name": "get_logs", "description": "Logs of a service.", "parameters": {}}}]


def test_tools_a_template_ignores_are_written_as_text_the_server_parses_back():
    from mockworld_trainer.model import template_renders_tools
    from mockworld_trainer.serving.tool_calls import parse_tool_calls

    hf = byte_level_hf_tokenizer()
    assert template_renders_tools(hf)  # the tests' template renders them: nothing is rewritten
    hf.chat_template = PLAIN_CHATML  # SmolLM2's kind: content only, tools dropped
    tok = ChatTemplateTokenizer(hf)
    assert not tok.renders_tools
    messages = transcript("Rolled back.")
    text = hf.decode(tok.encode(messages, TOOLS).input_ids)
    assert "<tools>" in text and '"get_logs"' in text  # the policy sees its tools
    assert "<tool_response>\nOOM after v2.1 deploy\n</tool_response>" in text
    # The assistant's call is trained as the text the server turns back into the same call.
    enc = tok.encode(messages, TOOLS)
    generated = hf.decode([t for t, bit in zip(enc.input_ids, enc.loss_mask, strict=True) if bit])
    first_turn = generated.split("<|im_end|>")[0]
    content, calls = parse_tool_calls(first_turn, frozenset({"get_logs"}))
    assert content == "Checking logs." and calls[0]["name"] == "get_logs"
    assert json.loads(calls[0]["arguments"]) == {"svc": "checkout"}
    # Served prompts are prefixes of the trained transcript, tools included.
    prompt = tok.generation_prompt(messages[:2], TOOLS)
    assert enc.input_ids[: len(prompt)] == prompt
