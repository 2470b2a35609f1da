"""Policy models and transcript tokenization.

A policy is a transformers causal LM plus a tokenizer that turns a multi-turn transcript (OpenAI chat
messages) into ``input_ids`` and a ``loss_mask`` that is 1 exactly on the tokens the policy generated:
the content of assistant turns (text and tool calls) and the end-of-turn token that stopped the
generation. System, user and tool turns, and the assistant header that the chat template writes before
a generation, are context, not actions, so they carry no loss (seed paper §3.2: tools and user are
simulated; only the agent's tokens are trained).

Two tokenizers: ``ByteTokenizer`` (bytes plus a few special tokens, defined here, for the tiny random
models of tests and CPU runs) and ``ChatTemplateTokenizer`` (a local Hugging Face tokenizer and its chat
template, for real models). Nothing here downloads: pretrained models load with local_files_only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, Qwen3Config

from .config import PretrainedModelSpec, TinyModelSpec
from .errors import BadRequestError

ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class Encoded:
    """One tokenized transcript."""

    input_ids: list[int]  # (T,)
    loss_mask: list[int]  # (T,) 1 on policy-generated tokens
    truncated: bool = False


class TranscriptTokenizer(Protocol):
    """Turns chat messages into token ids and the assistant loss mask."""

    pad_id: int

    def encode(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> Encoded: ...

    def generation_prompt(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None
    ) -> list[int]: ...

    def tool_call_opening(self, name: str | None) -> str | None:
        """The start of an assistant turn that can only go on as a tool call (of ``name``, when set), in
        the layout ``encode`` writes calls in; None when that layout cannot fix the name up front."""
        ...

    def text_ids(self, text: str) -> list[int]:
        """Token ids of plain text inside a turn (no special tokens)."""
        ...


def content_text(message: dict[str, Any]) -> str:
    """A message's content as one string: OpenAI content parts joined, none as empty."""
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def message_text(message: dict[str, Any]) -> str:
    """The text of a message as the byte tokenizer writes it: content, then one JSON line per tool call."""
    text = content_text(message)
    for call in message.get("tool_calls") or []:
        text += "\n<tool_call>" + json.dumps(call.get("function", call), sort_keys=True) + "</tool_call>"
    return text


class ByteTokenizer:
    """Bytes 0..255 plus specials; each turn is ``<role> utf-8 bytes <end>`` after one ``<bos>``.

    For an assistant turn the ``<assistant>`` header is the generation prompt (mask 0); its bytes and
    ``<end>`` are generated (mask 1). Tools, when given, are a masked JSON turn after ``<bos>``.
    """

    BOS, END = 256, 257
    ROLE_IDS = {"system": 258, "user": 259, "assistant": 260, "tool": 261}
    PAD = 262
    VOCAB_SIZE = 264  # 263 ids used, rounded up to a multiple of 8
    pad_id = PAD

    def encode(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> Encoded:
        ids, mask = [self.BOS], [0]
        if tools:
            body = list(json.dumps(list(tools), sort_keys=True).encode())
            ids += [self.ROLE_IDS["system"], *body, self.END]
            mask += [0] * (len(body) + 2)
        for m in messages:
            body = list(message_text(m).encode())
            generated = 1 if m["role"] == "assistant" else 0
            ids += [self.ROLE_IDS[m["role"]], *body, self.END]
            mask += [0] + [generated] * (len(body) + 1)
        return Encoded(ids, mask)

    def generation_prompt(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None
    ) -> list[int]:
        """What the policy sees before writing the next assistant turn: the transcript, then ``<assistant>``.

        ``encode(messages + [reply]).input_ids`` is this followed by the reply's bytes and ``<end>``.
        """
        return self.encode(messages, tools).input_ids + [self.ROLE_IDS["assistant"]]

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(i for i in ids if i < 256).decode(errors="replace")

    def tool_call_opening(self, name: str | None) -> str | None:
        # message_text sorts a call's keys, so "arguments" comes before the name: no name can be fixed.
        return None if name is not None else '\n<tool_call>{"arguments": '

    def text_ids(self, text: str) -> list[int]:
        return list(text.encode())


TOOLS_PREAMBLE = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{tools}\n</tools>\n\n"
    "For each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>'
)


def with_tools_as_text(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The transcript in the Hermes tool format, for a chat template that does not render tools itself.

    The tools are listed in the system message (one is added when there is none), an assistant's
    tool calls are written after its text as ``<tool_call>`` blocks (the format serving/tool_calls.py
    parses from a generation), and tool results are user turns in ``<tool_response>`` tags. Each message
    is rewritten on its own, so a prefix of the transcript renders to a prefix of the whole.
    """
    listed = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
    preamble = TOOLS_PREAMBLE.format(tools=listed)
    out: list[dict[str, Any]] = []
    for m in messages:
        content = content_text(m)
        if m["role"] == "assistant":
            for call in m.get("tool_calls") or []:
                fn = call.get("function", call)
                args = fn.get("arguments") or "{}"
                try:
                    args = json.loads(args) if isinstance(args, str) else args
                except ValueError:
                    pass  # written as the model wrote it
                body = json.dumps({"name": fn.get("name"), "arguments": args}, ensure_ascii=False)
                block = f"<tool_call>\n{body}\n</tool_call>"
                content = f"{content}\n{block}" if content else block
            out.append({"role": "assistant", "content": content})
        elif m["role"] == "tool":
            out.append({"role": "user", "content": f"<tool_response>\n{content}\n</tool_response>"})
        else:
            out.append({"role": m["role"], "content": content})
    if out and out[0]["role"] == "system":
        out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{preamble}"}
    else:
        out.insert(0, {"role": "system", "content": preamble})
    return out


def template_renders_tools(hf_tokenizer: Any) -> bool:
    """Whether the chat template writes the request's tools into the prompt (SmolLM2's, for one, does not)."""
    probe_tool = {"type": "function", "function": {"name": "zz_probe_tool", "description": "", "parameters": {}}}
    try:
        text = hf_tokenizer.apply_chat_template(
            [{"role": "user", "content": "x"}], tools=[probe_tool], tokenize=False, add_generation_prompt=True
        )
    except Exception:  # noqa: BLE001 - a template that fails on tools does not render them
        return False
    return "zz_probe_tool" in text


class ChatTemplateTokenizer:
    """A Hugging Face tokenizer with a chat template; the loss mask comes from prefix differences.

    A template that does not render tools gets them as text (``with_tools_as_text``, the Hermes format
    the policy server parses back into ``tool_calls``), so the policy sees its tools and the trainer
    scores the same tokens the server prompted with.

    For assistant message k, the template is rendered for messages[:k] with the generation prompt
    (what the policy saw) and for messages[:k+1]; the text between them is what the policy wrote. Its
    tokens up to and including the last end-of-turn token (the tokenizer's eos) get mask 1; anything
    the template appends after it (a newline) gets 0. Each segment is tokenized on its own, the way
    the serving engine saw the prompt and then produced the completion. A template that rewrites
    earlier turns (so one rendering is not a prefix of the next) is refused with the message index.
    """

    def __init__(self, hf_tokenizer: Any) -> None:
        if not getattr(hf_tokenizer, "chat_template", None):
            raise BadRequestError("tokenizer has no chat_template; a pretrained model dir must ship one")
        self.hf = hf_tokenizer
        pad = hf_tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else hf_tokenizer.eos_token_id
        self.eot = hf_tokenizer.eos_token
        self.renders_tools = template_renders_tools(hf_tokenizer)

    def _render(self, messages: Sequence[dict[str, Any]], tools: Any, generation_prompt: bool) -> str:
        if tools and not self.renders_tools:
            messages, tools = with_tools_as_text(messages, tools), None
        return self.hf.apply_chat_template(
            list(messages), tools=tools or None, tokenize=False, add_generation_prompt=generation_prompt
        )

    def _ids(self, text: str) -> list[int]:
        return self.hf(text, add_special_tokens=False)["input_ids"] if text else []

    def tool_call_opening(self, name: str | None) -> str | None:
        # The Hermes layout of with_tools_as_text, which Qwen3's own template writes too.
        # A named call opens its arguments' object too (a function's arguments are one), as a JSON-schema
        # guided decoder would.
        opening = '<tool_call>\n{"name": "'
        return opening if name is None else f'{opening}{name}", "arguments": {{'

    def text_ids(self, text: str) -> list[int]:
        return self._ids(text)

    def _assistant_segments(
        self, messages: Sequence[dict[str, Any]], tools: Any
    ) -> tuple[list[int], list[int], str]:
        """Token ids and mask up to the end of the last assistant turn, and the text they render."""
        ids: list[int] = []
        mask: list[int] = []
        done = ""
        for k, m in enumerate(messages):
            if m["role"] != "assistant":
                continue
            prompt = self._render(messages[:k], tools, True)
            full = self._render(messages[: k + 1], tools, False)
            if not prompt.startswith(done) or not full.startswith(prompt):
                raise BadRequestError(f"chat template is not prefix-stable at message {k}; cannot locate its tokens")
            context, completion = prompt[len(done) :], full[len(prompt) :]
            cut = completion.rfind(self.eot) + len(self.eot) if self.eot and self.eot in completion else len(completion)
            for text, bit in ((context, 0), (completion[:cut], 1), (completion[cut:], 0)):
                seg = self._ids(text)
                ids += seg
                mask += [bit] * len(seg)
            done = full
        return ids, mask, done

    def encode(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> Encoded:
        ids, mask, done = self._assistant_segments(messages, tools)
        rest = self._render(messages, tools, False)
        if not rest.startswith(done):
            raise BadRequestError("chat template is not prefix-stable at the end of the transcript")
        seg = self._ids(rest[len(done) :])
        return Encoded(ids + seg, mask + [0] * len(seg))

    def generation_prompt(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None
    ) -> list[int]:
        """The prompt of the next assistant turn, tokenized segment by segment exactly as ``encode`` will
        tokenize it once that turn is appended (so served and trained context tokens agree)."""
        ids, _, done = self._assistant_segments(messages, tools)
        prompt = self._render(messages, tools, True)
        if not prompt.startswith(done):
            raise BadRequestError(f"chat template is not prefix-stable at message {len(messages)}")
        return ids + self._ids(prompt[len(done) :])


@dataclass
class Policy:
    """A model and its tokenizer, on one device."""

    model: PreTrainedModel
    tokenizer: TranscriptTokenizer
    device: torch.device


def tiny_config(spec: TinyModelSpec) -> Qwen3Config:
    """Qwen3 architecture (the seed paper trains Qwen3-8B/14B) at toy size, byte vocabulary."""
    return Qwen3Config(
        vocab_size=ByteTokenizer.VOCAB_SIZE,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads,
        head_dim=spec.hidden_size // spec.num_heads,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=ByteTokenizer.BOS,
        eos_token_id=ByteTokenizer.END,
        pad_token_id=ByteTokenizer.PAD,
    )


def build_tiny_model(spec: TinyModelSpec) -> PreTrainedModel:
    """A randomly initialized model; the same seed gives the same weights, and global RNG state is untouched."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.seed)
        model = AutoModelForCausalLM.from_config(tiny_config(spec))
    return model


def load_tokenizer(spec: TinyModelSpec | PretrainedModelSpec) -> TranscriptTokenizer:
    if isinstance(spec, TinyModelSpec):
        return ByteTokenizer()
    return ChatTemplateTokenizer(AutoTokenizer.from_pretrained(spec.path, local_files_only=True))


def load_model(
    spec: TinyModelSpec | PretrainedModelSpec, weights_dir: str | None, device: torch.device
) -> PreTrainedModel:
    """The step-0 model of ``spec``, or the weights saved in ``weights_dir`` (a checkpoint), on ``device``."""
    dtype = torch.float32 if isinstance(spec, TinyModelSpec) else getattr(torch, spec.dtype)
    if weights_dir is None and isinstance(spec, TinyModelSpec):
        model = build_tiny_model(spec)
    else:
        path = weights_dir or spec.path
        try:
            model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, local_files_only=True)
        except OSError as e:
            raise BadRequestError(f"cannot load a causal LM from {path}: {e}") from e
    return model.to(device)


def pad_batch(
    items: Sequence[Encoded], pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-pads to the longest item: input_ids (B, T), attention_mask (B, T), loss_mask (B, T)."""
    t = max(len(e.input_ids) for e in items)
    ids = torch.full((len(items), t), pad_id, dtype=torch.long)  # (B, T)
    attn = torch.zeros((len(items), t), dtype=torch.long)  # (B, T)
    loss = torch.zeros((len(items), t), dtype=torch.long)  # (B, T)
    for i, e in enumerate(items):
        n = len(e.input_ids)
        ids[i, :n] = torch.tensor(e.input_ids)
        attn[i, :n] = 1
        loss[i, :n] = torch.tensor(e.loss_mask)
    return ids.to(device), attn.to(device), loss.to(device)


def token_logprobs(
    model: PreTrainedModel,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    temperature: float = 1.0,
    top_p: float = 1.0,
) -> torch.Tensor:
    """log pi(x_t | x_<t) for t = 1..T-1: (B, T-1) float32, one row of logits at a time to bound memory.

    pi is the distribution the policy server samples from (serving/generation.py): softmax(logits /
    ``temperature``), cut to the nucleus ``top_p`` and renormalized. GRPO's pi_old must be the
    distribution the rollouts were drawn from, and pi_theta the same family, or the ratio and its clip
    measure the distance to a policy nothing was sampled from. The nucleus is chosen on detached
    probabilities as the sampler chooses it (the smallest prefix of the sorted probabilities whose mass
    before it is below top_p); the target token is always kept in it, so a token the sampler could
    not have drawn (only float noise between sampler and trainer puts one outside) keeps a finite
    log-prob instead of -inf. SFT uses the defaults: the plain softmax.
    """
    logits = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits  # (B, T, V)
    targets = input_ids[:, 1:]  # (B, T-1)
    rows = [
        row_logprobs(row_logits, row_targets, temperature, top_p)
        for row_logits, row_targets in zip(logits[:, :-1], targets, strict=False)  # (T-1, V), (T-1,)
    ]
    return torch.stack(rows)  # (B, T-1)


def row_logprobs(logits: torch.Tensor, targets: torch.Tensor, temperature: float = 1.0, top_p: float = 1.0) -> torch.Tensor:
    """log pi(target_t) of one row: logits (n, V) predicting targets (n,), float32 (n,); see token_logprobs."""
    logits = logits.float()
    if temperature != 1.0:
        logits = logits / temperature
    picked = logits.gather(-1, targets[:, None]).squeeze(-1)  # (n,)
    if top_p < 1.0:
        logits = logits.masked_fill(~_nucleus(logits.detach(), targets, top_p), -math.inf)
    return picked - torch.logsumexp(logits, dim=-1)


def _nucleus(logits: torch.Tensor, targets: torch.Tensor, top_p: float) -> torch.Tensor:
    """(T-1, V) bool: the sampler's top-p nucleus of each position, plus that position's target token."""
    probs = torch.softmax(logits, dim=-1)  # (T-1, V)
    sorted_p, order = torch.sort(probs, dim=-1, descending=True, stable=True)  # (T-1, V)
    keep_sorted = (torch.cumsum(sorted_p, dim=-1) - sorted_p) < top_p  # as generation.sample_next
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)  # (T-1, V) back in vocabulary order
    keep[torch.arange(targets.shape[0], device=targets.device), targets] = True
    return keep


def truncate(e: Encoded, max_len: int) -> Encoded:
    """Cuts a transcript on the right to ``max_len`` tokens and marks it truncated."""
    if len(e.input_ids) <= max_len:
        return e
    return Encoded(e.input_ids[:max_len], e.loss_mask[:max_len], truncated=True)
