"""A tiny random Qwen2 policy and a character-level tokenizer, built locally (no downloads)."""

from __future__ import annotations

import string

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM


def tiny_policy(seed: int = 0):
    """The policy and its tokenizer: every printable character is a token."""
    import torch

    torch.manual_seed(seed)
    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2}
    for ch in string.printable:
        vocab.setdefault(ch, len(vocab))
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>", padding_side="left"
    )
    config = Qwen2Config(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        pad_token_id=0,
        eos_token_id=1,
        tie_word_embeddings=True,
    )
    return Qwen2ForCausalLM(config), tokenizer
