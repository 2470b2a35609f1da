"""Errors of the trainer worker.

Each class names one way a request can be wrong; ``type_name`` is the stable string the activity layer
puts in Temporal's ``ApplicationError.type`` so TypeScript workflows can branch on it: one of the
contract's error types (schemas/trainer-contract.ts TRAINER_ERROR_TYPES, error-types.json; a test
checks the two agree). None of them is worth retrying: the same request would fail the same way.
"""

from __future__ import annotations


class TrainerError(Exception):
    """Base class; carries the run and step it concerns, when known."""

    type_name = "TrainerError"

    def __init__(self, message: str, *, run_id: str | None = None, step: int | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.step = step


class BadRequestError(TrainerError):
    """Thrown when an activity input, a spec or a batch record is malformed; the message names every bad path."""

    type_name = "TrainerBadRequest"


class StepOutOfOrderError(TrainerError):
    """Thrown when step n is asked for while the latest applied step of the run is not n - 1 (or n or later)."""

    type_name = "TrainerStepOutOfOrder"


class StepMismatchError(TrainerError):
    """Thrown when an already-applied step is asked for again with a different batch, kind or model."""

    type_name = "TrainerStepMismatch"


class CheckpointMissingError(TrainerError):
    """Thrown when the weights a request needs are not on disk (pruned by retention, or never written)."""

    type_name = "TrainerCheckpointMissing"
