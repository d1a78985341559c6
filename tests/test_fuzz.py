"""No input makes the service fail on our side: schemathesis generates requests from the
published OpenAPI document against a running `run.py`, and every answer must be below 500."""

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
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"


def _call(port: int, path: str, body: Any = None, token: str | None = None) -> Any:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = orjson.dumps(body) if body is not None else None
    request = Request(f"http://127.0.0.1:{port}{path}", data=data, headers=headers)
    with urlopen(request, timeout=10) as response:
        return orjson.loads(response.read())


def test_generated_requests_never_get_a_server_error(tmp_path: Path) -> None:
    # given a running service and a signed-in owner
    port = free_port()
    env = {**os.environ, "MPS_PORT": str(port), "MPS_DATA_DIR": str(tmp_path / "var")}
    log = (tmp_path / "server.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "run.py")], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        for _ in range(200):
            try:
                _call(port, "/api/v1/health/live")
                break
            except OSError:
                time.sleep(0.1)
        signup = _call(
            port, "/api/v1/auth/signup", {"companyName": "Fuzz Ltd", "email": "fuzz@example.com"}
        )
        code = _call(port, "/api/v1/dev/mailbox?to=fuzz@example.com")["data"][0]["otp"]
        token = _call(
            port, "/api/v1/auth/otp/verify", {"loginId": signup["loginId"], "code": code}
        )["sessionToken"]
        document = tmp_path / "openapi.json"
        document.write_bytes(
            orjson.dumps(_call(port, "/api/v1/developer/openapi.json", token=token))
        )

        # when schemathesis throws generated requests at every operation
        run = subprocess.run(
            [
                str(SCHEMATHESIS),
                "run",
                str(document),
                "--url",
                f"http://127.0.0.1:{port}",
                "-H",
                f"Authorization: Bearer {token}",
                "--checks",
                "not_a_server_error",
                "--max-examples",
                "15",
                "--seed",
                "20261122",
                "--no-color",
                # Signing out or switching mode would end the session the rest of the run uses.
                "--exclude-path-regex",
                "logout|session/mode",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            cwd=tmp_path,
        )
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=20)
        log.close()

    # then no answer was a server error, and the server logged no traceback of ours
    assert run.returncode == 0, run.stdout[-4000:]
    served = (tmp_path / "server.log").read_text()
    assert "unexpected error serving" not in served
