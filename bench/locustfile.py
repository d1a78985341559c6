"""A locust scenario for merchants who script their own load tests against the service.

    .venv/bin/pip install locust        # not a dependency of the service
    .venv/bin/locust -f bench/locustfile.py --host http://127.0.0.1:8080 \\
        --headless --users 20 --spawn-rate 5 --run-time 30s

Each simulated merchant signs up a company of its own through the development mode's sign-in
flow (POST /auth/signup, its code from GET /dev/mailbox, POST /auth/otp/verify), or, when
MPS_TOKEN is set, uses that token (a session token or an API key with payments scopes) for
every user. It then creates payments, each POST with its own Idempotency-Key (a retry of the
same create would reuse it), retrieves the ones it created and lists the newest.

Run the service with MPS_RATE_LIMIT_SCALE=0 (or a larger scale) for more than a few users: the
per-user limits apply to load tests as to anyone. For figures to compare, bench/load.py drives
the same routes with wrk, which keeps up with the service on a small machine; locust, in Python,
needs about as much CPU per request as the service does.
"""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Callable
from typing import Any, TypeVar, cast

# locust is installed by those who use this file, not by the project: on a machine without it
# the type checker takes these names as Any instead of failing on the import.
from locust import HttpUser, between, task  # type: ignore[import-not-found, unused-ignore]

_Task = TypeVar("_Task", bound=Callable[..., None])


def _weighted(weight: int) -> Callable[[_Task], _Task]:
    """locust's @task with its type spelled out, for when the import above is Any."""
    return cast("Callable[[_Task], _Task]", task(weight))


_PAYMENT = {"amountMinor": "1500", "currency": "USD", "description": "locust"}


class Merchant(HttpUser):  # type: ignore[misc, unused-ignore]
    wait_time = between(0.05, 0.2)

    def on_start(self) -> None:
        self.created: list[str] = []
        token = os.environ.get("MPS_TOKEN") or self._sign_up()
        self.client.headers["Authorization"] = f"Bearer {token}"

    def _sign_up(self) -> str:
        email = f"locust-{uuid.uuid4().hex[:12]}@example.com"
        signup = self._json(
            "post",
            "/api/v1/auth/signup",
            json={"companyName": "Locust Ltd", "email": email},
            name="/api/v1/auth/signup",
        )
        mail = self._json(
            "get", f"/api/v1/dev/mailbox?to={email}", name="/api/v1/dev/mailbox?to=[email]"
        )
        messages = mail.get("items") or mail["data"]
        session = self._json(
            "post",
            "/api/v1/auth/otp/verify",
            json={"loginId": signup["loginId"], "code": messages[0]["otp"]},
            name="/api/v1/auth/otp/verify",
        )
        token: str = session["sessionToken"]
        return token

    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = self.client.request(method, path, **kwargs)
        response.raise_for_status()
        body: dict[str, Any] = response.json()
        return body

    @_weighted(3)
    def create_payment(self) -> None:
        with self.client.post(
            "/api/v1/merchant/payments",
            json=_PAYMENT,
            headers={"Idempotency-Key": str(uuid.uuid4())},
            catch_response=True,
        ) as response:
            if response.status_code != 201:
                response.failure(f"create answered {response.status_code}: {response.text}")
                return
            self.created.append(response.json()["id"])

    @_weighted(5)
    def get_payment(self) -> None:
        if not self.created:
            return
        payment_id = random.choice(self.created)
        self.client.get(
            f"/api/v1/merchant/payments/{payment_id}", name="/api/v1/merchant/payments/[id]"
        )

    @_weighted(2)
    def list_payments(self) -> None:
        self.client.get("/api/v1/merchant/payments?limit=20")
