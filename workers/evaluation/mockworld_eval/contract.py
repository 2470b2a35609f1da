"""What the TypeScript workflows send this worker and what it answers, read from JSON Schema files
rather than written here.

Every activity input and output is defined once, as zod in the repository's
``schemas/evaluation-contract.ts``, and emitted as JSON Schema into ``schemas/json/eval/``
(``npx tsx schemas/emit-json-schema.ts``, through ``schemas/eval-json-schema.ts``, which adds the
defaults this worker fills in; a TypeScript test fails when the committed files are stale). This
module validates against those files, so a malformed input fails non-retryably naming each bad field,
and fills in the defaults they declare. The classes below hold no field definitions: a record is its
validated JSON, read by attribute (``spec.task_id`` is ``taskId``); the end-to-end test
test/integration/evaluation.test.ts runs the two sides against each other.

The files are found next to this package's source (it is installed editable from the repository,
deploy/eval-venv.sh), or in ``MOCKWORLD_EVAL_CONTRACT_DIR`` when set (not the trainer's
``MOCKWORLD_CONTRACT_DIR``, which names the trainer's folder).
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Optional

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

# Activity names, as the workflows call them on MOCKWORLD_EVAL_TASK_QUEUE (activities.json lists the
# same; tests/test_contract.py holds them together).
RUN_TRIAL = "eval.runTrial"
LIST_TASKS = "eval.listTasks"
SUMMARIZE = "eval.summarize"

# BFCL-V4 multi-turn categories and tau2-bench domains this worker runs (the seed's anchors; the same
# constants as schemas/evaluation-contract.ts).
BFCL_CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
TAU2_DOMAINS = ("airline", "retail", "telecom")

MAX_SHOWN = 20  # problems listed in one error


def contract_dir() -> Path:
    explicit = os.environ.get("MOCKWORLD_EVAL_CONTRACT_DIR")
    if explicit:
        return Path(explicit)
    return Path(__file__).resolve().parents[3] / "schemas" / "json" / "eval"


@functools.cache
def schema(name: str) -> dict[str, Any]:
    """The JSON Schema ``<name>.json`` of the contract (e.g. ``trial-input``)."""
    path = contract_dir() / f"{name}.json"
    try:
        with open(path, encoding="utf-8") as f:
            loaded = json.load(f)
    except OSError as e:
        raise RuntimeError(
            f"evaluation contract file {path} is missing ({e}); run the worker from a checkout of the "
            "repository (deploy/eval-venv.sh installs it editable) or set MOCKWORLD_EVAL_CONTRACT_DIR"
        ) from e
    Draft202012Validator.check_schema(loaded)
    return loaded


@functools.cache
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(schema(name))


def activities() -> dict[str, dict[str, str]]:
    """Activity name -> {"input": file[, "output": file]}: every activity the worker must serve."""
    return schema("activities")["activities"]


def benchmarks() -> tuple[str, ...]:
    """The benchmarks a trial input may name (mockworld_eval.benchmarks registers one class each)."""
    return tuple(schema("trial-input")["properties"]["benchmark"]["enum"])


def error_types() -> tuple[str, ...]:
    """The failure types a retry cannot fix, as the workflows' retry policies list them."""
    return tuple(schema("error-types")["enum"])


class ContractError(ValueError):
    """A value that breaks the contract; the message names every bad field."""

    def __init__(self, what: str, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:MAX_SHOWN] + ([f"... and {len(problems) - MAX_SHOWN} more"] if len(problems) > MAX_SHOWN else [])
        super().__init__(f"invalid {what}: " + "; ".join(shown))


def problems(name: str, data: Any) -> list[str]:
    """Every way ``data`` breaks schema ``name``, one line each, named by its path."""
    errors = sorted(_validator(name).iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    # dict.fromkeys: one line per problem (each missing property is an error of its own that names
    # the whole `required` list).
    return list(dict.fromkeys(line for error in errors for line in _describe(error))) + _non_finite(data, ())


class Record:
    """A value of the contract, validated against its schema file (``SCHEMA``), with the defaults the
    file declares filled in and its numbers typed as the file says (a ``number`` is a float).

    ``TrialInput({...})`` or ``TrialInput(evaluationId=..., ...)`` validates (ContractError otherwise);
    a field reads by its snake_case name (``spec.max_steps`` is ``maxSteps``), None when left out, and
    an object field reads as a Record of its own. ``as_json()`` is the JSON to pass on, ``dump()``
    every field of the schema, None where absent (what a stored trial's settings are hashed from).
    """

    SCHEMA: ClassVar[str] = ""
    __slots__ = ("_node", "_data")

    def __init__(self, data: Optional[Mapping[str, Any]] = None, /, **fields: Any) -> None:
        payload = dict(data) if data is not None else fields
        found = problems(self.SCHEMA, payload)
        if found:
            raise ContractError(self.SCHEMA, found)
        node = schema(self.SCHEMA)
        object.__setattr__(self, "_node", node)
        object.__setattr__(self, "_data", _normalize(node, payload))

    @classmethod
    def parse_json(cls, text: str) -> "Record":
        try:
            data = json.loads(text)
        except ValueError as e:
            raise ContractError(cls.SCHEMA, [f"input: not JSON ({e})"]) from None
        if not isinstance(data, dict):
            raise ContractError(cls.SCHEMA, [f"input: expected an object, got {_show(data)}"])
        return cls(data)

    @staticmethod
    def _of(node: dict[str, Any], data: dict[str, Any]) -> "Record":
        """A valid nested object, read through its part of the schema."""
        record = object.__new__(Record)
        object.__setattr__(record, "_node", node)
        object.__setattr__(record, "_data", data)
        return record

    def __getattr__(self, name: str) -> Any:
        properties = self._node.get("properties", {})
        key = _camel(name)
        if key not in properties:
            raise AttributeError(f"{self.SCHEMA or 'record'} has no field {key!r} (fields: {', '.join(properties)})")
        value = self._data.get(key)
        if isinstance(value, dict) and "properties" in properties[key]:
            return Record._of(properties[key], value)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a contract record is read-only")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and self._data == other._data

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._data!r})"

    def as_json(self) -> dict[str, Any]:
        return copy.deepcopy(self._data)

    def dump(self) -> dict[str, Any]:
        return _complete(self._node, self._data)


class TrialInput(Record):
    """One (benchmark, category or domain, task, trial) of an evaluation run (``eval.runTrial``)."""

    SCHEMA = "trial-input"


class TrialSummary(Record):
    """What ``eval.runTrial`` returns (the trajectory stays in PostgreSQL)."""

    SCHEMA = "trial-summary"


class ListTasksInput(Record):
    SCHEMA = "list-tasks-input"


class SummarizeInput(Record):
    SCHEMA = "summarize-input"


class EvaluationMetrics(Record):
    """What ``eval.summarize`` returns (metrics.py)."""

    SCHEMA = "evaluation-metrics"


# An endpoint (policy, user) and a sampling setting are object fields of a TrialInput.
Endpoint = Record
Sampling = Record


def dump(record: Record) -> dict:
    """The camelCase JSON the TypeScript side reads, every field present (None where left out)."""
    return record.dump()


# --- defaults and types ---------------------------------------------------------------------------
def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _normalize(node: dict[str, Any], data: Any) -> Any:
    """Valid ``data`` with every absent property that declares a ``default`` set to it, and numbers
    typed as the schema declares them (JSON's 0 for a ``number`` is 0.0; 2.0 for an ``integer`` is 2)."""
    kind = node.get("type")
    if kind == "number" and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if kind == "integer" and isinstance(data, float):
        return int(data)
    if kind == "array" and isinstance(data, list) and isinstance(node.get("items"), dict):
        return [_normalize(node["items"], item) for item in data]
    if "properties" not in node or not isinstance(data, dict):
        return data
    out = dict(data)
    for key, sub in node["properties"].items():
        if key in out:
            out[key] = _normalize(sub, out[key])
        elif "default" in sub:
            out[key] = _normalize(sub, copy.deepcopy(sub["default"]))
    return out


def _complete(node: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, sub in node.get("properties", {}).items():
        value = data.get(key)
        out[key] = _complete(sub, value) if isinstance(value, dict) and "properties" in sub else copy.deepcopy(value)
    return out


# --- messages -------------------------------------------------------------------------------------
def _path(parts: Any) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "input"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_BOUNDS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}
_TYPES = {"object": "an object", "array": "a list", "string": "a string", "integer": "an integer"}
_TYPES |= {"number": "a number", "boolean": "a boolean", "null": "null"}


def _describe(error: ValidationError) -> Iterator[str]:
    at = _path(error.absolute_path)
    v, value, inst = error.validator, error.validator_value, error.instance
    if v == "additionalProperties" and value is False:
        valid = ", ".join(sorted(error.schema.get("properties", {})))
        for key in sorted(set(inst) - set(error.schema.get("properties", {}))):
            yield f"{_path([*error.absolute_path, key])}: unknown field (valid: {valid})"
    elif v == "required":
        for key in value:
            if isinstance(inst, dict) and key not in inst:
                yield f"{_path([*error.absolute_path, key])}: required"
    elif v == "type":
        kinds = [value] if isinstance(value, str) else value
        yield f"{at}: expected {' or '.join(_TYPES.get(t, t) for t in kinds)}, got {_show(inst)}"
    elif v in _BOUNDS:
        yield f"{at}: must be {_BOUNDS[v]} {value}, got {_show(inst)}"
    elif v == "enum":
        yield f"{at}: expected one of {', '.join(map(repr, value))}, got {_show(inst)}"
    elif v in ("minLength", "minItems"):
        yield f"{at}: must not be empty" if value == 1 else f"{at}: needs at least {value} items"
    elif v == "pattern":
        yield f"{at}: {_show(inst)} does not match {value}"
    else:
        yield f"{at}: {error.message[:200]}"


def _non_finite(data: Any, parts: tuple[Any, ...]) -> list[str]:
    """NaN and Infinity are not JSON, so no schema mentions them, but Python's json module reads them."""
    if isinstance(data, float) and not math.isfinite(data):
        return [f"{_path(parts)}: expected a finite number, got {data!r}"]
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in _non_finite(v, (*parts, k))]
    if isinstance(data, list):
        return [p for i, v in enumerate(data) for p in _non_finite(v, (*parts, i))]
    return []

