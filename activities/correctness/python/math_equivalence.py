"""Checks math answers against gold answers with math-verify, inside the sandbox.

Run by activities/correctness/math-verify.ts through the sandbox (activities/sandbox), never in the
worker: the answers come from the policy. stdin: {"pairs": [{"gold": ..., "answer": ...}]};
stdout: one JSON line per pair, in order, as soon as it is decided, so a pair that exhausts the
sandbox's caps costs only the pairs after it (the worker retries those one by one).

Only LaTeX extraction is used (latex2sympy's parser): math-verify's plain-expression extraction
hands the text to sympy's parse_expr, which evaluates it as Python, and the answer text is the
policy's.
"""

import json
import sys

from math_verify import LatexExtractionConfig, parse, verify

EXTRACTION = [LatexExtractionConfig()]
TIMEOUT_SECONDS = 5


def parsed(text):
    """The sympy forms of `text`, read as one LaTeX math expression."""
    return parse(f"${text}$", extraction_config=EXTRACTION, parsing_timeout=TIMEOUT_SECONDS)


def shown(values):
    return str(values[0])[:300] if values else None


def main():
    request = json.load(sys.stdin)
    for index, pair in enumerate(request["pairs"]):
        verdict = {"index": index, "equivalent": False, "gold": None, "answer": None, "error": None}
        try:
            gold = parsed(pair["gold"])
            answer = parsed(pair["answer"])
            verdict["gold"], verdict["answer"] = shown(gold), shown(answer)
            verdict["equivalent"] = bool(gold and answer and verify(gold, answer, timeout_seconds=TIMEOUT_SECONDS))
        except Exception as error:  # noqa: BLE001 - an unparsable answer is a verdict, not a crash
            verdict["error"] = f"{type(error).__name__}: {error}"[:300]
        print(json.dumps(verdict), flush=True)


main()
