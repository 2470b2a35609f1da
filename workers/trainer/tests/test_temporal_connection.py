"""The trainer's Temporal settings come from Temporal's environment configuration: variables, a
profile file, TLS files, an API key; a broken configuration exits at once saying what to check."""

from __future__ import annotations

import os

import pytest
from temporalio.service import TLSConfig

from mockworld_trainer.temporal_connection import connect_settings, describe

NO_FILE = {"TEMPORAL_CONFIG_FILE": "/nonexistent/temporal.toml"}


def test_defaults_are_the_typescript_sides():
    config = connect_settings(NO_FILE)
    assert config == {"target_host": "127.0.0.1:7233", "namespace": "default"}
    assert describe(config) == "127.0.0.1:7233 (namespace 'default', plaintext)"


def test_an_api_key_turns_tls_on_and_is_never_described():
    config = connect_settings(
        {**NO_FILE, "TEMPORAL_ADDRESS": "ns.acct.tmprl.cloud:7233", "TEMPORAL_NAMESPACE": "ns.acct", "TEMPORAL_API_KEY": "secret-key"}
    )
    assert config["target_host"] == "ns.acct.tmprl.cloud:7233" and config["namespace"] == "ns.acct"
    assert config["api_key"] == "secret-key" and config["tls"] is True
    assert "secret-key" not in describe(config) and "API key" in describe(config)


def test_client_certificates_and_the_server_ca_are_read_from_their_files(tmp_path):
    for name in ("ca.pem", "client.pem", "client.key"):
        (tmp_path / name).write_bytes(f"-----{name}-----".encode())
    config = connect_settings(
        {
            **NO_FILE,
            "TEMPORAL_TLS_CLIENT_CERT_PATH": str(tmp_path / "client.pem"),
            "TEMPORAL_TLS_CLIENT_KEY_PATH": str(tmp_path / "client.key"),
            "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(tmp_path / "ca.pem"),
            "TEMPORAL_TLS_SERVER_NAME": "temporal.internal",
        }
    )
    tls = config["tls"]
    assert isinstance(tls, TLSConfig)
    assert tls.client_cert == b"-----client.pem-----" and tls.client_private_key == b"-----client.key-----"
    assert tls.server_root_ca_cert == b"-----ca.pem-----" and tls.domain == "temporal.internal"


def test_a_profile_of_the_config_file_is_used_and_variables_override_it(tmp_path):
    toml = tmp_path / "temporal.toml"
    toml.write_text(
        '[profile.default]\naddress = "127.0.0.1:1"\n'
        '[profile.cloud]\naddress = "cloud.example:7233"\nnamespace = "prod"\napi_key = "k"\n'
    )
    env = {"TEMPORAL_CONFIG_FILE": str(toml), "TEMPORAL_PROFILE": "cloud"}
    assert connect_settings(env)["target_host"] == "cloud.example:7233"
    assert connect_settings(env)["namespace"] == "prod"
    assert connect_settings({**env, "TEMPORAL_NAMESPACE": "staging"})["namespace"] == "staging"
    assert connect_settings({"TEMPORAL_CONFIG_FILE": str(toml)})["target_host"] == "127.0.0.1:1"


def test_a_missing_profile_or_certificate_exits_naming_what_to_check(tmp_path):
    toml = tmp_path / "temporal.toml"
    toml.write_text('[profile.default]\naddress = "127.0.0.1:1"\n')
    with pytest.raises(SystemExit, match="TEMPORAL_PROFILE"):
        connect_settings({"TEMPORAL_CONFIG_FILE": str(toml), "TEMPORAL_PROFILE": "nope"})
    with pytest.raises(SystemExit, match="TEMPORAL_TLS_"):
        connect_settings({**NO_FILE, "TEMPORAL_TLS_CLIENT_CERT_PATH": str(tmp_path / "absent.pem")})


def test_a_metrics_address_adds_a_runtime_serving_prometheus():
    import socket
    import urllib.request

    from mockworld_trainer.temporal_connection import with_metrics

    config = connect_settings(NO_FILE)
    assert with_metrics(config, None) is config
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with_runtime = with_metrics(config, f"127.0.0.1:{port}")
    assert with_runtime["runtime"] is not None and with_runtime["target_host"] == config["target_host"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.status == 200


def test_an_empty_variable_is_an_unset_one():
    config = connect_settings({**NO_FILE, "TEMPORAL_ADDRESS": "", "TEMPORAL_API_KEY": ""})
    assert config == {"target_host": "127.0.0.1:7233", "namespace": "default"}


def test_the_check_command_exits_nonzero_naming_what_to_set(tmp_path):
    """`python -m mockworld_trainer.temporal_connection` says why it cannot connect and exits 1 (it
    leaves through os._exit, skipping the finalization that can abort a short-lived client)."""
    import subprocess
    import sys

    toml = tmp_path / "temporal.toml"
    toml.write_text('[profile.default]\naddress = "127.0.0.1:1"\n')
    done = subprocess.run(
        [sys.executable, "-m", "mockworld_trainer.temporal_connection"],
        env={**os.environ, "TEMPORAL_CONFIG_FILE": str(toml), "TEMPORAL_PROFILE": "nope"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "TEMPORAL_PROFILE" in done.stderr
