"""Imported once by the trial process template (runner.py's forkserver) before any trial is forked
from it: the benchmarks' import cost (litellm alone is ~5 s of CPU) is paid once per worker, not per
trial. Nothing here runs a trial, so every forked trial starts from module state no trial has touched
(BFCL's environment instances are created by the first call of a trial, in the trial's own process)."""

import os
import sys

from loguru import logger

from . import environment

environment.prepare()  # before the imports below: BFCL's project root, litellm's local price map
# tau2 logs its registry at DEBUG when imported; the worker's log keeps warnings and errors.
logger.remove()
logger.add(sys.stderr, level=os.environ.get("TAU2_LOG_LEVEL", "WARNING"))

import bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker  # noqa: E402,F401
import bfcl_eval.model_handler.api_inference.openai_completion  # noqa: E402,F401
import bfcl_eval.utils  # noqa: E402,F401
import tau2.evaluator.evaluator  # noqa: E402,F401
import tau2.run  # noqa: E402,F401

from . import benchmarks, bfcl_trial, tau2_trial, trial  # noqa: E402,F401

benchmarks.names()  # imports every benchmark's module once, here, not in each trial
