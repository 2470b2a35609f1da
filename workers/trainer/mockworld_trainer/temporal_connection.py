"""How the trainer reaches Temporal: Temporal's own environment configuration, the settings the
TypeScript side reads too (services/temporal/connection.ts). A profile of the TOML file
TEMPORAL_CONFIG_FILE (default ~/.config/temporalio/temporal.toml; TEMPORAL_PROFILE picks one),
overridden by TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS,
TEMPORAL_TLS_CLIENT_CERT_PATH/_DATA, TEMPORAL_TLS_CLIENT_KEY_PATH/_DATA,
TEMPORAL_TLS_SERVER_CA_CERT_PATH/_DATA, TEMPORAL_TLS_SERVER_NAME and TEMPORAL_GRPC_META_*.
Kept apart from worker.py so it imports no torch: ``python -m mockworld_trainer.temporal_connection``
checks the settings of a node without loading a model.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
from temporalio.client import Client
from temporalio.envconfig import ClientConfig
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from .step_metrics import STEP_SECONDS, STEP_SECONDS_BUCKETS

log = logging.getLogger("mockworld.trainer")

DEFAULT_ADDRESS = "127.0.0.1:7233"
DEFAULT_NAMESPACE = "default"


def connect_settings(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``Client.connect`` keyword arguments from Temporal's environment configuration (``env``,
    default this process's), with the TypeScript side's defaults for address and namespace. A
    configuration that cannot be used (a missing profile or certificate file) exits saying what to
    check: waiting would not fix it."""
    # An empty variable is an unset one (a container's ``TEMPORAL_API_KEY=`` must not turn TLS on).
    given = {k: v for k, v in (os.environ if env is None else env).items() if v != ""}
    try:
        config: dict[str, Any] = dict(ClientConfig.load_client_connect_config(override_env_vars=given))
    except Exception as e:  # the bridge raises plain RuntimeError/OSError for every cause
        raise SystemExit(
            f"mockworld trainer: cannot read Temporal's connection settings ({type(e).__name__}: {e}); "
            "check TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE and the TEMPORAL_TLS_* paths"
        ) from None
    config.setdefault("target_host", DEFAULT_ADDRESS)
    config.setdefault("namespace", DEFAULT_NAMESPACE)
    return config


def with_metrics(config: dict[str, Any], address: str | None) -> dict[str, Any]:
    """``config`` with an SDK runtime that serves Prometheus metrics at ``http://<address>/metrics``
    (MOCKWORLD_METRICS_ADDRESS: the scrape target and the container probe), or unchanged without one.
    The same runtime serves the trainer's own series (step_metrics.py), its step-time buckets in seconds."""
    if not address:
        return config
    prometheus = PrometheusConfig(
        bind_address=address,
        histogram_bucket_overrides={STEP_SECONDS: STEP_SECONDS_BUCKETS},
    )
    runtime = Runtime(telemetry=TelemetryConfig(metrics=prometheus))
    return {**config, "runtime": runtime}


def describe(config: Mapping[str, Any]) -> str:
    """Where and how a connection goes, for messages; never the secrets themselves."""
    security = [name for name, on in (("TLS", config.get("tls")), ("API key", config.get("api_key"))) if on]
    return (
        f"{config['target_host']} (namespace {config['namespace']!r}, "
        f"{', '.join(security) if security else 'plaintext'})"
    )


async def connect(config: Mapping[str, Any], wait_s: float | None = 0.0) -> Client:
    """Connects to Temporal with ``config`` (``connect_settings()``), trying again for ``wait_s``
    seconds (None: as long as it takes, so a worker started before the frontend serves once it is
    up). Says what it waits for at once, then once a minute; when the time is spent, an unreachable
    server becomes a SystemExit that says what to check."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    said_at: float | None = None
    delay = 1.0
    while True:
        try:
            return await asyncio.wait_for(Client.connect(**config), timeout=15)
        except (TimeoutError, Exception) as e:
            message = (
                f"mockworld trainer: cannot reach Temporal at {describe(config)}: "
                f"{type(e).__name__}: {e}\n"
                "Start the local stack (`mockworld stack up` / `temporal server start-dev`) or point "
                "TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE (or a profile of TEMPORAL_CONFIG_FILE) at a running "
                "server, with TEMPORAL_API_KEY or TEMPORAL_TLS_CLIENT_CERT_PATH/_KEY_PATH where it needs them."
            )
            waited = loop.time() - started
            if wait_s is not None and waited + delay > wait_s:
                raise SystemExit(message) from None
            if said_at is None or loop.time() - said_at >= 60:
                log.warning("%s\nWaiting for it (%.0f s so far); Ctrl-C to give up.", message, waited)
                said_at = loop.time()
        await asyncio.sleep(delay)
        delay = min(2 * delay, 10.0)


async def _check() -> str:
    config = connect_settings()
    client = await connect(config)
    info = await client.workflow_service.get_system_info(GetSystemInfoRequest())
    return f"reached Temporal {info.server_version or '(version not reported)'} at {describe(config)}"


def main() -> None:
    """Connects once with this process's settings and says where it got (exits non-zero saying why
    when it cannot).

    Ends with ``os._exit``: in a short-lived process the Temporal client's native runtime threads
    can still be winding down when the interpreter finalizes, and CPython then aborts with
    "PyGILState_Release: thread state ... must be current" (temporalio/sdk-python#300; seen here on a
    loaded machine). The check has said all it has to say by then, so finalization is skipped."""
    code = 0
    try:
        print(asyncio.run(_check()))
    except SystemExit as e:
        print(e.code, file=sys.stderr)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
