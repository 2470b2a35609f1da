"""The contract with the TypeScript workflows, read from JSON Schema files rather than written here.

Every activity input, model spec, step config, batch reference and batch record is defined once, as
zod in the repository's ``schemas/trainer-*.ts``, and emitted as JSON Schema into
``schemas/json/trainer/`` (``npx tsx schemas/emit-json-schema.ts``; a TypeScript test fails when the
committed files are stale). This module validates against those files and fills in the defaults
they declare, so the trainer refuses exactly what the TypeScript side refuses at a run's start.

The files are found next to this package's source (it is installed editable from the repository,
deploy/trainer-venv.sh), or in ``MOCKWORLD_CONTRACT_DIR`` when set.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError

from .errors import BadRequestError

MAX_SHOWN = 20  # problems listed in one error; a batch of 4096 bad records names the first ones


def contract_dir() -> Path:
    explicit = os.environ.get("MOCKWORLD_CONTRACT_DIR")
    if explicit:
        return Path(explicit)
    return Path(__file__).resolve().parents[3] / "schemas" / "json" / "trainer"


# JSON Schema's "integer" admits 1.0; the trainer formats steps into directory names and sizes into
# tensors, where a float is an error, so only Python ints (not bools) are integers here.
_TYPES = Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
)
_Validator = validators.extend(Draft202012Validator, type_checker=_TYPES)


@functools.cache
def schema(name: str) -> dict[str, Any]:
    """The JSON Schema ``<name>.json`` of the contract (e.g. ``model-spec``)."""
    path = contract_dir() / f"{name}.json"
    try:
        with open(path, encoding="utf-8") as f:
            loaded = json.load(f)
    except OSError as e:
        raise RuntimeError(
            f"trainer contract file {path} is missing ({e}); run the trainer from a checkout of the "
            "repository (deploy/trainer-venv.sh installs it editable) or set MOCKWORLD_CONTRACT_DIR"
        ) from e
    _Validator.check_schema(loaded)
    return loaded


@functools.cache
def _validator(name: str) -> Any:
    return _Validator(schema(name))


def activities() -> dict[str, dict[str, str]]:
    """Activity name -> {"input": file, "output": file}: every activity the trainer must serve."""
    return schema("activities")["activities"]


def activity_schema(activity: str, direction: str) -> str:
    """The schema name of an activity's ``input`` or ``output``."""
    return activities()[activity][direction].removesuffix(".json")


def problems(name: str, data: Any, where: str = "") -> list[str]:
    """Every way ``data`` breaks schema ``name``, one line each, named by its path under ``where``."""
    found = [line for error in _validator(name).iter_errors(data) for line in _describe(error, where)]
    found += _non_finite(data, where)
    return found


def validate(name: str, data: Any, what: str, where: str = "") -> Any:
    """``data`` with the schema's defaults filled in; BadRequestError naming every bad path otherwise."""
    found = problems(name, data, where)
    if found:
        raise_problems(what, found)
    return fill_defaults(schema(name), data)


def raise_problems(what: str, found: list[str]) -> None:
    shown = found[:MAX_SHOWN] + ([f"... and {len(found) - MAX_SHOWN} more"] if len(found) > MAX_SHOWN else [])
    raise BadRequestError(f"invalid {what}:\n  " + "\n  ".join(shown))


def fill_defaults(node: dict[str, Any], data: Any) -> Any:
    """A copy of valid ``data`` with every absent property that declares a ``default`` set to it."""
    branches = node.get("oneOf") or node.get("anyOf")
    if branches:
        for branch in branches:
            if _Validator(branch).is_valid(data):
                return fill_defaults(branch, data)
        return data
    if node.get("type") != "object" or not isinstance(data, dict):
        return data
    out = dict(data)
    for key, sub in node.get("properties", {}).items():
        if key in out:
            out[key] = fill_defaults(sub, out[key])
        elif "default" in sub:
            out[key] = copy.deepcopy(sub["default"])
    return out


# --- messages -------------------------------------------------------------------------------------
def _path(where: str, parts: Any) -> str:
    out = where
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "input"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_BOUNDS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}


def _describe(error: ValidationError, where: str) -> Iterator[str]:
    """Lines for one validation error, written for a person and never dumping a whole transcript."""
    at = _path(where, error.absolute_path)
    v, value, inst = error.validator, error.validator_value, error.instance
    # The field's description says what the bound is for ("step 0 is the initial policy").
    why = f" ({error.schema['description']})" if isinstance(error.schema, dict) and error.schema.get("description") else ""
    if v in ("oneOf", "anyOf"):
        yield from _describe_union(error, where)
    elif v == "additionalProperties" and value is False:
        valid = ", ".join(sorted(error.schema.get("properties", {})))
        for key in sorted(set(inst) - set(error.schema.get("properties", {}))):
            yield f"{_path(where, [*error.absolute_path, key])}: unknown field (valid: {valid})"
    elif v == "required":
        for key in value:
            if isinstance(inst, dict) and key not in inst:
                yield f"{_path(where, [*error.absolute_path, key])}: required"
    elif v == "type":
        yield f"{at}: expected {_types(value)}, got {_show(inst)}{why}"
    elif v in _BOUNDS:
        yield f"{at}: must be {_BOUNDS[v]} {value}, got {_show(inst)}{why}"
    elif v == "enum":
        yield f"{at}: expected one of {', '.join(map(repr, value))}, got {_show(inst)}{why}"
    elif v == "const":
        yield f"{at}: expected {value!r}, got {_show(inst)}"
    elif v in ("minLength", "minItems"):
        yield f"{at}: must not be empty" if value == 1 else f"{at}: needs at least {value} items"
    elif v == "pattern":
        yield f"{at}: {_show(inst)} does not match {value}{why}"
    elif v == "contains":  # the schema's description says which item is missing and why
        yield f"{at}: no item has the required shape{why}"
    else:
        yield f"{at}: {error.message[:200]}"


def _types(value: Any) -> str:
    names = {"object": "an object", "array": "a list", "string": "a string", "integer": "an integer"}
    names |= {"number": "a number", "boolean": "a boolean", "null": "null"}
    return " or ".join(names.get(t, t) for t in ([value] if isinstance(value, str) else value))


def _describe_union(error: ValidationError, where: str) -> Iterator[str]:
    """A union names the errors of the branch the value was meant for: the one its type and its
    discriminator (a ``const`` property such as ``kind``) fit. When none fits, what would have."""
    branches: dict[int, list[ValidationError]] = {i: [] for i in range(len(error.validator_value))}
    for sub in error.context or []:
        branches[sub.relative_schema_path[0]].append(sub)

    def ruled_out(errors: list[ValidationError]) -> bool:
        return any(
            (e.validator == "type" and not e.relative_path) or (e.validator == "const" and len(e.relative_path) == 1)
            for e in errors
        )

    fitting = [errors for errors in branches.values() if not ruled_out(errors)]
    if fitting:
        for sub in fitting[0]:
            yield from _describe(sub, where)
        return
    at = _path(where, error.absolute_path)
    discriminators = [
        e for errors in branches.values() for e in errors if e.validator == "const" and len(e.relative_path) == 1
    ]
    keys = {e.relative_path[0] for e in discriminators}
    if len(discriminators) == len(branches) and len(keys) == 1:
        key = keys.pop()
        allowed = ", ".join(repr(e.validator_value) for e in discriminators)
        yield f"{_path(where, [*error.absolute_path, key])}: expected one of {allowed}, got {_show(error.instance.get(key))}"
    else:
        allowed = [_types(e.validator_value) for errors in branches.values() for e in errors if e.validator == "type"]
        yield f"{at}: expected {' or '.join(allowed) or 'another shape'}, got {_show(error.instance)}"


def _non_finite(data: Any, where: str, parts: tuple[Any, ...] = ()) -> list[str]:
    """NaN and Infinity are not JSON, so no schema mentions them, but Python's json module reads them."""
    if isinstance(data, float) and not math.isfinite(data):
        return [f"{_path(where, parts)}: expected a finite number, got {data!r}"]
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in _non_finite(v, where, (*parts, k))]
    if isinstance(data, list):
        return [p for i, v in enumerate(data) for p in _non_finite(v, where, (*parts, i))]
    return []
