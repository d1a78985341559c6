"""Steps the tests of the real entry point take: against a `RunningServer` (tests/server.py), a
signed-up merchant, a paid payment, every page of a list, the balance and /health; `Burst`, what
a burst of requests sent from many threads was told when the server was killed in its middle;
and `logged_by_run_py`, what run.py's own logging makes of a record."""

from __future__ import annotations

import http.client
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.error import HTTPError

import orjson

from tests.helpers import TEST_CARD
from tests.server import RUN_PY, RunningServer, server_environment

BALANCES = ("available", "pending", "reserved")
# A token that looks like a session's, for the tests that it never reaches a log.
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c3JfMSJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ"


def logged_by_run_py(
    record: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The finished process that set up run.py's logging (a production start without settings
    stops right after) and then ran `record`, a statement that logs; `env` is added to the
    environment (whose own `MPS_` variables are dropped)."""
    probe = (
        "import logging, sys; sys.path.insert(0, sys.argv[1]); import run; "
        f"run.main(['--mode', 'production']); {record}"
    )
    return subprocess.run(
        [sys.executable, "-c", probe, str(RUN_PY.parent)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env=server_environment(env),
    )


def sign_up(server: RunningServer, email: str = "m@example.com") -> str:
    """The session token of the owner of a new company, "Durable Ltd", through the real flow."""
    signup = server.call("/api/v1/auth/signup", {"companyName": "Durable Ltd", "email": email})
    mail = server.call(f"/api/v1/dev/mailbox?to={email}")
    session = server.call(
        "/api/v1/auth/otp/verify", {"loginId": signup["loginId"], "code": mail["data"][0]["otp"]}
    )
    token: str = session["sessionToken"]
    return token


def paid_payment(server: RunningServer, token: str, amount: int) -> dict[str, Any]:
    """A payment of `amount` USD, created and paid by card."""
    payment: dict[str, Any] = server.call(
        "/api/v1/merchant/payments", {"amountMinor": str(amount), "currency": "USD"}, token=token
    )
    server.call(f"/api/v1/checkout/{payment['reference']}/pay", {"card": TEST_CARD})
    return payment


def every(server: RunningServer, path: str, token: str) -> list[dict[str, Any]]:
    """Every item of a list, following the cursor to its end (`path` already has a query)."""
    found: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = server.call(path + (f"&cursor={cursor}" if cursor else ""), token=token)
        found += page["data"]
        cursor = page["nextCursor"]
        if cursor is None:
            return found


def balance(server: RunningServer, token: str) -> dict[str, int]:
    body = server.call("/api/v1/merchant/balance?currency=USD", token=token)
    return {k: int(body[f"{k}Minor"]) for k in BALANCES}


def at_one_moment(server: RunningServer, token: str, *lists: str) -> tuple[Any, ...]:
    """The balance, then every item of each of `lists` (paths with a query), as of one moment:
    the processors and the bank keep moving money after a restart, so the lists are read again
    until the balance is the same before and after them (once nothing new is created, an
    unchanged balance means nothing moved in between)."""
    for _ in range(50):
        before = balance(server, token)
        found = [every(server, path, token) for path in lists]
        if balance(server, token) == before:
            return (before, *found)
    raise AssertionError("the balance never held still for long enough to be read")


def health_of(server: RunningServer) -> dict[str, Any]:
    """/health's answer, from loopback so with its details, also when it is a 503."""
    try:
        body: dict[str, Any] = server.call("/api/v1/health")
    except HTTPError as exc:
        body = orjson.loads(exc.read())
    return body


@dataclass
class Burst:
    """What a burst of requests from many threads was told besides its answers: `killed` is set
    just before the SIGKILL, `enough` once the burst has had the answers to kill after; a
    request the kill cut off counts in `lost`, and any other failure (none is expected) is
    noted in `unexpected`. Subclasses keep the answers, under `_lock`."""

    killed: threading.Event = field(default_factory=threading.Event)
    enough: threading.Event = field(default_factory=threading.Event)
    lost: int = 0
    unexpected: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def call(self, what: str, request: Callable[[], Any]) -> Any:
        """`request()`'s answer, or None when it had none: an error status is noted as
        unexpected unless `refusal_expected` takes it, a dropped connection as lost to the kill
        (or unexpected, if the kill had not come yet)."""
        try:
            return request()
        except HTTPError as exc:
            body = exc.read()
            with self._lock:
                if not self.refusal_expected(what, exc.code, body):
                    self.unexpected.append(f"{what}: {exc.code} {body[:300]!r}")
        except (OSError, http.client.HTTPException) as exc:
            with self._lock:
                if self.killed.is_set():
                    self.lost += 1
                else:
                    self.unexpected.append(f"{what} before the kill: {exc!r}")
        return None

    def refusal_expected(self, what: str, status: int, body: bytes) -> bool:
        """Whether an error status is an answer the burst counts on (none by default); called
        with the lock held."""
        return False
