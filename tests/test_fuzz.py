"""No input makes the service fail on our side: schemathesis generates requests from the
published OpenAPI document against a running `run.py`, and every answer must be below 500."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from tests.server import RunningServer

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"


def test_generated_requests_never_get_a_server_error(tmp_path: Path) -> None:
    # given a running service and a signed-in owner
    with RunningServer(tmp_path) as server:
        signup = server.call(
            "/api/v1/auth/signup", {"companyName": "Fuzz Ltd", "email": "fuzz@example.com"}
        )
        code = server.call("/api/v1/dev/mailbox?to=fuzz@example.com")["data"][0]["otp"]
        token = server.call(
            "/api/v1/auth/otp/verify", {"loginId": signup["loginId"], "code": code}
        )["sessionToken"]
        document = tmp_path / "openapi.json"
        document.write_bytes(
            orjson.dumps(server.call("/api/v1/developer/openapi.json", token=token))
        )

        # when schemathesis throws generated requests at every operation
        run = subprocess.run(
            [
                str(SCHEMATHESIS),
                "run",
                str(document),
                "--url",
                server.base_url,
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

    # then no answer was a server error, and the server logged no traceback of ours
    assert run.returncode == 0, run.stdout[-4000:]
    served = server.log_text()
    assert "unexpected error serving" not in served
