"""A node told to stop keeps serving through its grace period while readiness says 503, so a
balancer takes it out before its listener closes (mps.serve, MPS_SHUTDOWN_GRACE).

Each test waits on what the node does (readiness turning 503, requests answered, the process
ending), never on a clock: the grace is long, and a second SIGTERM ends it when the test is done.
"""

from __future__ import annotations

import re
import signal
import socket
import time
from pathlib import Path
from urllib.error import HTTPError
from urllib.request import urlopen

import pytest

from mps.config import ConfigError, load_settings
from tests.helpers import production_env
from tests.server import RunningServer

WITHIN = 20.0


def _readiness(server: RunningServer) -> int:
    """The status of /health/ready; a refused connection fails the test."""
    try:
        with urlopen(f"{server.base_url}/api/v1/health/ready", timeout=5) as response:
            return int(response.status)
    except HTTPError as answered:
        return answered.code


def _until_readiness(server: RunningServer, status: int) -> None:
    deadline = time.monotonic() + WITHIN
    while (seen := _readiness(server)) != status:
        assert time.monotonic() < deadline, f"/health/ready still answers {seen}"
        time.sleep(0.05)


def test_a_node_serves_through_its_grace_period_with_readiness_503_after_sigterm(
    tmp_path: Path,
) -> None:
    # given a node with a long grace period, ready
    with RunningServer(tmp_path, env={"MPS_SHUTDOWN_GRACE": "600"}) as server:
        _until_readiness(server, 200)

        # when it is told to stop
        server.process.send_signal(signal.SIGTERM)

        # then readiness turns 503, and requests are still served, a sign-up included
        _until_readiness(server, 503)
        served = [
            server.call("/api/v1/auth/signup", {"companyName": f"Acme {n}", "email": f"{n}@b.co"})
            for n in range(3)
        ]
        assert all(body["ok"] for body in served), served
        assert server.call("/api/v1/health/live")["status"] == "up"
        assert _readiness(server) == 503
        assert server.process.poll() is None

        # and a second signal ends the grace: the node stops cleanly
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=WITHIN) == 0
    assert "serving 600 s more" in server.log_text()


def _answer_on(kept: socket.socket) -> bytes:
    """GET /health/live on `kept` (HTTP/1.1, so kept alive unless told otherwise); the head of
    the answer, its body read."""
    kept.sendall(b"GET /api/v1/health/live HTTP/1.1\r\nHost: node\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        data += kept.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?im)^content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
    while len(body) < length:
        body += kept.recv(4096)
    return head.lower()


def test_a_stopping_node_closes_each_kept_alive_connection_as_it_answers_on_it(
    tmp_path: Path,
) -> None:
    # given a node, and a connection kept alive to it as a balancer keeps one
    with RunningServer(tmp_path, env={"MPS_SHUTDOWN_GRACE": "600"}) as server:
        _until_readiness(server, 200)
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as kept:
            assert b"connection: close" not in _answer_on(kept)

            # when it is told to stop
            server.process.send_signal(signal.SIGTERM)
            _until_readiness(server, 503)

            # then the next answer on that connection is served, says Connection: close, and
            # the node ends the connection after it (a recv that timed out would fail here)
            head = _answer_on(kept)
            assert head.startswith(b"http/1.1 200"), head
            assert b"connection: close" in head
            assert kept.recv(1) == b""

        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=WITHIN) == 0


def test_a_node_stops_on_its_own_once_its_grace_period_ends(tmp_path: Path) -> None:
    # given a node with a short grace period
    with RunningServer(tmp_path, env={"MPS_SHUTDOWN_GRACE": "3"}) as server:
        _until_readiness(server, 200)

        # when it is told to stop, once
        server.process.send_signal(signal.SIGTERM)

        # then it says it is not ready, and ends by itself, cleanly
        _until_readiness(server, 503)
        assert server.process.wait(timeout=WITHIN) == 0


def test_grace_defaults_to_five_seconds_in_production_and_none_in_development(
    tmp_path: Path,
) -> None:
    data = {"MPS_DATA_DIR": str(tmp_path)}

    assert load_settings([], production_env(**data)).shutdown_grace == 5.0
    assert load_settings([], data).shutdown_grace == 0.0
    assert load_settings([], {**data, "MPS_SHUTDOWN_GRACE": "12.5"}).shutdown_grace == 12.5


@pytest.mark.parametrize("value", ["-1", "soon", "nan", "inf"])
def test_grace_is_refused_unless_a_number_of_seconds(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match="MPS_SHUTDOWN_GRACE"):
        load_settings([], {"MPS_DATA_DIR": str(tmp_path), "MPS_SHUTDOWN_GRACE": value})
