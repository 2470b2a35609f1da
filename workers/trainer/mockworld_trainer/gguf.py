"""GGUF bases: a llama.cpp model file becomes a transformers directory once, then a pretrained model.

The embedded model (SmolLM2-135M-Instruct, Q4_1) ships as one ``.gguf`` file holding the weights, the
tokenizer and the chat template. transformers reads it (``from_pretrained(dir, gguf_file=name)``, with
the ``gguf`` package) and de-quantizes it to float tensors, which takes tens of seconds on a laptop.
Every process that needs the base (trainer ranks, the policy server, later steps' reloads) would pay
that again, so the first one saves the de-quantized model with ``save_pretrained`` into a directory
named by the file's sha256 and every later one loads that directory. The directory is written under a
temporary name and renamed into place, so concurrent processes never see half of it.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

from .checkpoint import mockworld_home
from .errors import BadRequestError

HASH_CHUNK = 1 << 20


def cache_root() -> Path:
    return mockworld_home() / "models" / "transformers"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def pretrained_dir(gguf_path: str) -> str:
    """The transformers directory of ``gguf_path``'s de-quantized weights, tokenizer and chat template."""
    source = Path(gguf_path).expanduser().resolve()
    if not source.is_file():
        raise BadRequestError(f"model.path: {source} is not a file; a gguf base names a local .gguf file")
    target = cache_root() / file_sha256(source)[:32]
    if (target / "config.json").exists():
        return str(target)
    _convert(source, target)
    return str(target)


def _convert(source: Path, target: Path) -> None:
    # Imported here: only a gguf base needs them, and transformers' GGUF reader needs the gguf package.
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
            model = AutoModelForCausalLM.from_pretrained(
                str(source.parent), gguf_file=source.name, dtype=torch.float32
            )
        except (OSError, ValueError, ImportError) as e:
            raise BadRequestError(f"cannot read {source} as a GGUF causal LM: {e}") from e
        if not getattr(tokenizer, "chat_template", None):
            raise BadRequestError(f"{source} has no chat template (tokenizer.chat_template); the trainer needs one")
        # transformers marks a GGUF-loaded model as quantized ("gguf") and refuses to save it, though
        # its tensors are already de-quantized floats: it is saved as the plain model it now is.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        try:
            tmp.rename(target)
        except OSError:
            if not (target / "config.json").exists():  # not a concurrent winner: a real failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
