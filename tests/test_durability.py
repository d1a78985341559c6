"""An acknowledged write survives a crash: SIGKILL right after the 201, then restart."""

from __future__ import annotations

from pathlib import Path

from tests.server import RunningServer


def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    # given a running server with a signed-in merchant
    with RunningServer(tmp_path) as server:
        signup = server.call(
            "/api/v1/auth/signup", {"companyName": "Durable Ltd", "email": "d@example.com"}
        )
        mail = server.call("/api/v1/dev/mailbox?to=d@example.com")
        session = server.call(
            "/api/v1/auth/otp/verify",
            {"loginId": signup["loginId"], "code": mail["data"][0]["otp"]},
        )
        token = session["sessionToken"]

        # when payments are acknowledged and the process is killed at once
        created = [
            server.call(
                "/api/v1/merchant/payments",
                {"amountMinor": str(100 + n), "currency": "USD"},
                token=token,
            )
            for n in range(20)
        ]
        server.kill()

    # then after a restart every acknowledged payment and the session are there
    with RunningServer(tmp_path, port=server.port) as restarted:
        listed = restarted.call("/api/v1/merchant/payments?limit=100", token=token)
    assert {p["id"] for p in listed["data"]} == {p["id"] for p in created}
