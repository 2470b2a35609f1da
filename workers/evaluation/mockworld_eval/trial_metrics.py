"""The evaluation worker's own Prometheus series, beside the Temporal SDK runtime's.

Recorded through the activity's metric meter, so the SDK runtime that serves ``temporal_*`` at
MOCKWORLD_METRICS_ADDRESS (worker.py) serves these too, labelled with the worker's namespace, task
queue and activity type. Without that address nothing is served and recording costs little.
"""

from __future__ import annotations

from temporalio import activity
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

TRIALS = "mockworld_eval_trials_total"
TRIAL_SECONDS = "mockworld_eval_trial_duration_seconds"

# A BFCL entry takes seconds, a tau2 task with a slow model most of an hour.
TRIAL_SECONDS_BUCKETS = (1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 3600)


def record_trial(benchmark: str, group: str, termination: str, stored: bool, seconds: float) -> None:
    """Counts one trial call by benchmark, group and how it ended (`stored`: a repeated call that
    found its row, not run again); a trial that ran has its wall time observed."""
    meter = activity.metric_meter().with_additional_attributes({"benchmark": benchmark, "group": group})
    trials = meter.create_counter(TRIALS, "Evaluation trials by benchmark, group and termination (stored: not rerun).")
    trials.add(1, {"termination": "stored" if stored else termination})
    if not stored:
        wall = meter.create_histogram_float(TRIAL_SECONDS, "Wall time of trials that ran, by benchmark and group.", "s")
        wall.record(seconds)


def metrics_runtime(address: str | None) -> Runtime | None:
    """An SDK runtime serving Prometheus at ``http://<address>/metrics`` (MOCKWORLD_METRICS_ADDRESS),
    or None without an address."""
    if not address:
        return None
    buckets = {TRIAL_SECONDS: TRIAL_SECONDS_BUCKETS}
    prometheus = PrometheusConfig(bind_address=address, histogram_bucket_overrides=buckets)
    return Runtime(telemetry=TelemetryConfig(metrics=prometheus))
