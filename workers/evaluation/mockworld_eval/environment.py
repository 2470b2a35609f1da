"""Process settings the benchmark packages read at import time; set before importing either."""

from __future__ import annotations

import os
import tempfile
from typing import Optional

_process_scratch: Optional[str] = None


def prepare(scratch: Optional[str] = None) -> None:
    """BFCL creates result/, score/ and lock files under BFCL_PROJECT_ROOT when imported (by default
    next to its installed package): point it at a scratch directory (`scratch`, or one per process).
    litellm downloads its model price map at import unless LITELLM_LOCAL_MODEL_COST_MAP is set."""
    global _process_scratch
    if scratch is None:
        if _process_scratch is None:
            _process_scratch = tempfile.mkdtemp(prefix="mockworld-eval-")
        scratch = _process_scratch
    os.environ["BFCL_PROJECT_ROOT"] = scratch
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    os.environ.setdefault("LITELLM_LOG", "ERROR")
