"""An acknowledged write survives a crash: SIGKILL right after the 201, then restart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.request import Request, urlopen

import orjson

from tests.helpers import free_port

ROOT = Path(__file__).resolve().parent.parent


def _call(port: int, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = orjson.dumps(body) if body is not None else None
    request = Request(f"http://127.0.0.1:{port}{path}", data=data, method=method, headers=headers)
    with urlopen(request, timeout=10) as response:
        return orjson.loads(response.read())


def _start(port: int, data_dir: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "MPS_PORT": str(port), "MPS_DATA_DIR": str(data_dir)}
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "run.py")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            _call(port, "GET", "/api/v1/health/live")
            return server
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise AssertionError("server did not start")


def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    # given a running server with a signed-in merchant
    port = free_port()
    server = _start(port, tmp_path)
    try:
        signup = _call(
            port,
            "POST",
            "/api/v1/auth/signup",
            {"companyName": "Durable Ltd", "email": "d@example.com"},
        )
        mail = _call(port, "GET", "/api/v1/dev/mailbox?to=d@example.com")
        session = _call(
            port,
            "POST",
            "/api/v1/auth/otp/verify",
            {"loginId": signup["loginId"], "code": mail["data"][0]["otp"]},
        )
        token = session["sessionToken"]

        # when a payment is acknowledged and the process is killed at once
        created = [
            _call(
                port,
                "POST",
                "/api/v1/merchant/payments",
                {"amountMinor": str(100 + n), "currency": "USD"},
                token,
            )
            for n in range(20)
        ]
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=10)

    # then after a restart every acknowledged payment and the session are there
    server = _start(port, tmp_path)
    try:
        listed = _call(port, "GET", "/api/v1/merchant/payments?limit=100", token=token)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert {p["id"] for p in listed["data"]} == {p["id"] for p in created}
