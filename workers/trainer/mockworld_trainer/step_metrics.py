"""The trainer's own Prometheus series, beside the Temporal SDK runtime's.

Recorded through the activity's metric meter (``activity.metric_meter()``): the SDK runtime that
serves ``temporal_*`` at MOCKWORLD_METRICS_ADDRESS (temporal_connection.with_metrics) serves these
too, with the worker's namespace, task queue and activity type as labels. Without that address the
meter is the runtime's default (nothing is served) and in ActivityEnvironment a no-op, so recording
always costs little and never fails a step.
"""

from __future__ import annotations

from temporalio import activity

STEP_SECONDS = "mockworld_trainer_step_duration_seconds"
STEPS = "mockworld_trainer_steps_total"

# Steps run from seconds (a tiny model) to most of an hour (a large one on one GPU); the runtime's
# default buckets are for task latencies in milliseconds.
STEP_SECONDS_BUCKETS = (0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 2400, 3600)


def record_step(kind: str, replayed: bool, seconds: float) -> None:
    """Counts one step call by outcome; an applied step's wall time (load, update, save) goes to the
    histogram. A replay (a retried step found already applied) returns its record and is not timed:
    its milliseconds would drag the step-time quantiles down."""
    meter = activity.metric_meter().with_additional_attributes({"kind": kind})
    outcome = "replayed" if replayed else "applied"
    meter.create_counter(STEPS, "Trainer step calls by kind and outcome (applied, replayed).").add(
        1, {"outcome": outcome}
    )
    if not replayed:
        meter.create_histogram_float(
            STEP_SECONDS, "Wall time of applied trainer steps by kind (load, update, save).", "s"
        ).record(seconds)
