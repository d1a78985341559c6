"""The command line (`python -m mps`), run as a subprocess against the app on a real port.

The app runs in this test's event loop, in development mode (the dev mailbox, loopback
webhook targets) on the real clock, so the signatures `listen` relays are fresh; the CLI runs
as a child process, awaited without blocking that loop. Each CLI run has its own credentials
file under the test's folder.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import stat
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import orjson
import pytest
from aiohttp import ClientSession, web
from aiohttp.test_utils import TestClient

from mps.bootstrap import Overrides
from mps.cli.patterns import Route, Routing, subscription
from mps.domain.clock import utcnow
from mps.webhooks import verify_signature
from tests.helpers import Member, create_payment, free_port, latest_code, pay, sign_up
from tests.receiver import Receiver
from tests.server import server_environment

REPO = Path(__file__).resolve().parent.parent
# 1 min -> 6 ms: a failed delivery is retried at once.
RETRY_SCALE = 0.0001
# A single CLI command, start to end (the interpreter starts in well under a second).
RUN_WITHIN = 20.0


@dataclass
class Ran:
    status: int
    out: str
    err: str

    def json(self) -> Any:
        return orjson.loads(self.out)


@dataclass
class Service:
    client: TestClient[Any, Any]
    base_url: str
    member: Member
    config: Path

    def env(self, **extra: str) -> dict[str, str]:
        return server_environment(
            {"MPS_URL": self.base_url, "MPS_CLI_CONFIG": str(self.config), **extra}
        )

    async def spawn(self, *args: str, stdin: bool = False) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "mps",
            *args,
            cwd=REPO,
            env=self.env(),
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )

    async def cli(self, *args: str) -> Ran:
        process = await self.spawn(*args)
        async with asyncio.timeout(RUN_WITHIN):
            out, err = await process.communicate()
        assert process.returncode is not None
        return Ran(process.returncode, out.decode(), err.decode())

    async def login(self) -> None:
        ran = await self.cli("login", "--email", self.member.email, "--from-dev-mailbox")
        assert ran.status == 0, ran

    async def api(self, method: str, path: str, body: Any = None, token: str = "") -> Any:
        headers = {"Authorization": f"Bearer {token or self.member.token}"}
        response = await self.client.request(method, f"/api/v1{path}", json=body, headers=headers)
        assert response.status < 300, await response.text()
        return await response.json()

    async def test_key(self) -> str:
        created = await self.api(
            "POST",
            "/merchant/api-keys",
            {"name": "cli", "scopes": ["payments:write", "refunds:write", "settings:write"]},
        )
        key: str = created["key"]
        return key

    async def endpoints(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = (await self.api("GET", "/merchant/webhooks"))["data"]
        return rows


@pytest.fixture
async def service(
    aiohttp_client: Callable[..., Any],
    make_app: Callable[..., web.Application],
    tmp_path: Path,
) -> Service:
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    app = make_app(Overrides(clock=utcnow), public_url=base_url, webhook_retry_scale=RETRY_SCALE)
    client: TestClient[Any, Any] = await aiohttp_client(app, server_kwargs={"port": port})
    member = await sign_up(client)
    return Service(client, base_url, member, tmp_path / "config" / "mps" / "cli.json")


# -- login and logout ---------------------------------------------------------------------------


async def test_login_from_the_dev_mailbox_stores_a_working_session_readable_by_its_owner_only(
    service: Service,
) -> None:
    # when the CLI logs in with the code from the dev mailbox
    ran = await service.cli("login", "--email", service.member.email, "--from-dev-mailbox")

    # then the session is stored, 0600 in a 0700 folder, for this URL, and it works
    assert ran.status == 0, ran
    assert stat.S_IMODE(service.config.stat().st_mode) == 0o600
    assert stat.S_IMODE(service.config.parent.stat().st_mode) == 0o700
    stored = orjson.loads(service.config.read_bytes())
    assert stored["url"] == service.base_url
    me = await service.api("GET", "/auth/me", token=stored["token"])
    assert me["company"]["id"] == service.member.company_id


async def test_login_asks_for_the_code_on_stdin_and_logout_revokes_the_session(
    service: Service,
) -> None:
    # given a login waiting at its prompt
    process = await service.spawn("login", "--email", service.member.email, stdin=True)
    assert process.stdin is not None and process.stderr is not None
    async with asyncio.timeout(RUN_WITHIN):
        prompt = await process.stderr.readuntil(b": ")
        assert b"6-digit code" in prompt

        # when the emailed code is typed
        process.stdin.write((await latest_code(service.client, service.member.email)).encode())
        process.stdin.write(b"\n")
        await process.stdin.drain()
        process.stdin.close()
        await process.communicate()

    # then it is logged in; and logout revokes the session and removes the file
    assert process.returncode == 0
    token = orjson.loads(service.config.read_bytes())["token"]
    ran = await service.cli("logout")
    assert ran.status == 0, ran
    assert not service.config.exists()
    response = await service.client.get(
        "/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status == 401


async def test_login_with_a_key_refuses_a_key_the_service_does_not_know(service: Service) -> None:
    ran = await service.cli("login", "--key", "sk_test_" + "x" * 32)

    assert ran.status == 1, ran
    assert "unauthenticated" in ran.err
    assert not service.config.exists()


# -- payments -----------------------------------------------------------------------------------


async def test_payments_create_list_and_get_round_trip(service: Service) -> None:
    # given a logged-in CLI
    await service.login()

    # when a payment is created twice with one idempotency key, then listed and read
    args = ("payments", "create", "--amount", "12.50", "--currency", "usd")
    first = await service.cli(*args, "--description", "Two flat whites", "--idempotency-key", "o-1")
    again = await service.cli(*args, "--description", "Two flat whites", "--idempotency-key", "o-1")
    listed = await service.cli("payments", "list", "--limit", "5", "--status", "pending")
    got = await service.cli("payments", "get", first.json()["id"])

    # then one payment, as the service shows it
    assert first.status == 0, first
    payment = first.json()
    assert payment["amountMinor"] == "1250" and payment["currency"] == "USD"
    assert payment["description"] == "Two flat whites" and payment["status"] == "PENDING"
    assert again.json()["id"] == payment["id"]
    assert [p["id"] for p in listed.json()["data"]] == [payment["id"]]
    assert got.status == 0 and got.json()["id"] == payment["id"]
    assert first.out.startswith("{\n  ")  # pretty-printed


async def test_exit_status_is_1_for_a_refusal_2_for_usage_and_3_for_no_service(
    service: Service,
) -> None:
    await service.login()

    refused = await service.cli("payments", "create", "--amount", "1250", "--currency", "xxx")
    missing = await service.cli("payments", "get", "pay_doesnotexist")
    usage = await service.cli("payments", "create", "--currency", "usd")
    not_logged_in = await service.cli(
        "--url", f"http://127.0.0.1:{free_port()}", "payments", "list"
    )
    unreachable = await service.cli(
        "trigger", "webhook.ping", "--key", "sk_test_x", "--url", f"http://127.0.0.1:{free_port()}"
    )

    assert refused.status == 1 and refused.out == ""
    assert "XXX is not supported" in refused.err and "validation_error" in refused.err
    assert missing.status == 1 and "not_found" in missing.err
    assert usage.status == 2 and "--amount" in usage.err
    # Stored credentials are never sent to another URL.
    assert not_logged_in.status == 2 and "not logged in" in not_logged_in.err
    assert unreachable.status == 3
    assert unreachable.err.startswith("mps: cannot reach") and unreachable.err.count("\n") == 1
    for ran in (refused, missing, usage, not_logged_in, unreachable):
        assert "Traceback" not in ran.err


async def test_amount_takes_major_units_with_the_currencys_decimals_and_amount_minor_minor_units(
    service: Service,
) -> None:
    # given a logged-in CLI
    await service.login()

    # when amounts are given both ways, in a currency with 2 decimals and one with none
    major = await service.cli("payments", "create", "--amount", "12.5", "--currency", "usd")
    minor = await service.cli("payments", "create", "--amount-minor", "1250", "--currency", "usd")
    yen = await service.cli("payments", "create", "--amount", "500", "--currency", "jpy")
    too_precise = await service.cli("payments", "create", "--amount", "5.5", "--currency", "jpy")
    both = await service.cli(
        "payments", "create", "--amount", "1", "--amount-minor", "100", "--currency", "usd"
    )

    # then both ways name the same amount, and a wrong one is a usage error
    assert major.status == 0, major
    assert major.json()["amountMinor"] == "1250" and minor.json()["amountMinor"] == "1250"
    assert yen.status == 0, yen
    assert yen.json()["amountMinor"] == "500"
    assert too_precise.status == 2 and "JPY has 0 decimals" in too_precise.err
    assert both.status == 2 and "not allowed with argument" in both.err


async def test_refunds_balance_and_the_other_resources_answer_as_the_service_shows_them(
    service: Service,
) -> None:
    # given a logged-in CLI and a paid payment
    await service.login()
    payment = await create_payment(service.client, service.member)
    paid = await pay(service.client, payment["reference"])
    assert paid.status < 300, await paid.text()

    # when part of it is refunded in major units, and each resource is read
    refund = await service.cli(
        "refunds", "create", "--payment-id", payment["id"], "--amount", "5", "--reason", "Cold"
    )
    refunds = await service.cli("refunds", "list", "--payment-id", payment["id"])
    got = await service.cli("refunds", "get", refund.json()["id"])
    balance = await service.cli("balance")
    events = await service.cli("events", "list", "--type", "payment.completed")
    lists = [
        await service.cli(*command)
        for command in (
            ("payouts", "list", "--status", "pending"),
            ("invoices", "list"),
            ("customers", "list"),
            ("webhooks", "list"),
        )
    ]
    missing_payout = await service.cli("payouts", "get", "po_doesnotexist")
    cancel_missing = await service.cli("payouts", "cancel", "po_doesnotexist")

    # then each is the service's answer
    assert refund.status == 0, refund
    assert refund.json()["amountMinor"] == "500" and refund.json()["paymentId"] == payment["id"]
    assert [r["id"] for r in refunds.json()["data"]] == [refund.json()["id"]]
    assert got.json()["id"] == refund.json()["id"]
    assert balance.status == 0, balance
    # (the amounts move as the refund settles, so the currencies are compared)
    shown = await service.api("GET", "/merchant/balance")
    assert [b["currency"] for b in balance.json()["data"]] == [b["currency"] for b in shown["data"]]
    assert events.status == 0, events
    assert {e["type"] for e in events.json()["data"]} == {"payment.completed"}
    for ran in lists:
        assert ran.status == 0, ran
        assert isinstance(ran.json()["data"], list)
    assert missing_payout.status == 1 and "not_found" in missing_payout.err
    assert cancel_missing.status == 1 and "not_found" in cancel_missing.err


async def test_payouts_create_needs_an_amount_and_a_bank_account_before_calling_the_service(
    service: Service,
) -> None:
    await service.login()

    no_amount = await service.cli(
        "payouts", "create", "--currency", "usd", "--bank-account", "ba_x"
    )
    bad_amount = await service.cli(
        "payouts", "create", "--amount", "12,50", "--currency", "usd", "--bank-account", "ba_x"
    )

    assert no_amount.status == 2 and "--amount" in no_amount.err
    assert bad_amount.status == 2 and "--amount takes major units" in bad_amount.err


# -- the sandbox --------------------------------------------------------------------------------


async def test_trigger_payment_completed_with_a_test_key_marks_the_payment_paid(
    service: Service,
) -> None:
    # given a pending payment and a test key
    payment = await create_payment(service.client, service.member)
    key = await service.test_key()

    # when the sandbox is triggered with the payment's id as an option
    ran = await service.cli(
        "trigger", "payment.completed", "--key", key, "--payment-id", payment["id"]
    )

    # then the payment is PAID
    assert ran.status == 0, ran
    assert ran.json()["event"]["type"] == "payment.completed"
    paid = await service.api("GET", f"/merchant/payments/{payment['id']}")
    assert paid["status"] == "PAID"


async def test_trigger_uses_the_stored_key_and_a_json_body_and_needs_a_key(
    service: Service,
) -> None:
    # given a logged-in session, without a key
    await service.login()
    payment = await create_payment(service.client, service.member)
    without_key = await service.cli("trigger", "payment.completed", "--payment-id", payment["id"])

    # when a key is stored and the body given as --data
    stored = await service.cli("login", "--key", await service.test_key())
    ran = await service.cli(
        "trigger",
        "payment.completed",
        "--data",
        orjson.dumps({"paymentId": payment["id"]}).decode(),
    )

    # then the sandbox ran with the stored key, which sits beside the session
    assert without_key.status == 2 and "--key" in without_key.err
    assert stored.status == 0, stored
    assert ran.status == 0, ran
    assert ran.json()["object"]["id"] == payment["id"]
    assert (await service.api("GET", f"/merchant/payments/{payment['id']}"))["status"] == "PAID"
    assert set(orjson.loads(service.config.read_bytes())) == {"url", "token", "key"}


# -- listen -------------------------------------------------------------------------------------


@dataclass
class Listening:
    """`mps listen args…` running: its endpoint id, the secret it printed, its lines."""

    service: Service
    args: tuple[str, ...]
    process: asyncio.subprocess.Process | None = None
    endpoint_id: str = ""
    secret: str = ""
    lines: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    _readers: list[asyncio.Task[None]] = field(default_factory=list)

    async def __aenter__(self) -> Self:
        self.process = await self.service.spawn("listen", "--print-secret", *self.args)
        assert self.process.stdout is not None and self.process.stderr is not None
        async with asyncio.timeout(RUN_WITHIN):
            self.secret = (await self.process.stdout.readline()).decode().strip()
            while True:
                line = (await self.process.stderr.readline()).decode()
                assert line, f"listen ended before it was ready: {self.err}"
                self.err.append(line)
                if line.startswith("Ready"):
                    self.endpoint_id = line.split(" through ")[1].split()[0]
                    break
        self._readers = [
            asyncio.create_task(self._read(self.process.stdout, self.lines)),
            asyncio.create_task(self._read(self.process.stderr, self.err)),
        ]
        return self

    async def _read(self, stream: asyncio.StreamReader, into: list[str]) -> None:
        while line := await stream.readline():
            into.append(line.decode())

    async def line_for(self, event_id: str, count: int = 1, within: float = 10.0) -> list[str]:
        """The relay's lines about `event_id`, once there are `count` of them."""
        deadline = time.monotonic() + within
        while True:
            found = [line for line in self.lines if event_id in line]
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(found)} of {count} lines for {event_id}: {self.lines}")
            await asyncio.sleep(0.02)

    async def stop(self, signum: int = signal.SIGTERM) -> int:
        assert self.process is not None
        if self.process.returncode is None:
            self.process.send_signal(signum)
        async with asyncio.timeout(RUN_WITHIN):
            status = await self.process.wait()
            await asyncio.gather(*self._readers)
        return status

    async def __aexit__(self, *exc: object) -> None:
        if self.process is not None and self.process.returncode is None:
            await self.stop()


@pytest.fixture
async def receivers() -> AsyncIterator[tuple[Receiver, Receiver]]:
    async with Receiver() as first, Receiver() as second:
        yield first, second


async def _succeeded(service: Service, endpoint_id: str, count: int) -> list[dict[str, Any]]:
    """The endpoint's deliveries once `count` of them have SUCCEEDED."""
    deadline = time.monotonic() + 10
    while True:
        rows = (await service.api("GET", f"/merchant/webhooks/{endpoint_id}/deliveries"))["data"]
        if sum(r["status"] == "SUCCEEDED" for r in rows) >= count:
            return list(rows)
        assert time.monotonic() < deadline, rows
        await asyncio.sleep(0.05)


async def test_listen_forwards_a_signed_event_and_deletes_its_endpoint_when_stopped(
    service: Service, receivers: tuple[Receiver, Receiver]
) -> None:
    # given a logged-in CLI listening, forwarding to a local receiver
    receiver, _ = receivers
    await service.login()
    async with Listening(service, ("--forward-to", receiver.url())) as listening:
        [endpoint] = await service.endpoints()
        assert endpoint["id"] == listening.endpoint_id and endpoint["events"] == ["*"]

        # when a payment is created
        payment = await create_payment(service.client, service.member)

        # then its payment.created arrives, signed with the printed secret, headers unchanged
        [received] = await receiver.wait_for(1)
        event = received.event
        assert event["type"] == "payment.created" and event["data"]["object"]["id"] == payment["id"]
        verify_signature(received.body, received.headers["X-Service-Signature"], listening.secret)
        assert received.headers["X-Service-Event-Id"] == event["id"]
        assert received.headers["webhook-id"] == event["id"]
        assert received.headers["X-Service-Delivery-Id"].startswith("whd_")
        [line] = await listening.line_for(event["id"])
        assert "payment.created" in line and receiver.url() in line and "[200]" in line

        # and when it is stopped (Ctrl-C)
        status = await listening.stop(signal.SIGINT)

    # then its endpoint is gone
    assert status == 0, listening.err
    assert await service.endpoints() == []
    assert any(f"Deleted endpoint {listening.endpoint_id}" in line for line in listening.err)


async def test_listen_deletes_the_endpoints_relays_killed_outright_left_behind(
    service: Service, receivers: tuple[Receiver, Receiver]
) -> None:
    # given the endpoints of two relays on this host: one whose process is gone (killed
    # outright), one whose process still runs; and one of a relay on another host
    receiver, _ = receivers
    await service.login()
    ended = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await ended.wait()
    host = socket.gethostname()
    left = {
        description: (
            await service.api(
                "POST",
                "/merchant/webhooks",
                {
                    "url": "http://127.0.0.1:9/mps-listen",
                    "events": ["*"],
                    "description": description,
                },
            )
        )["id"]
        for description in (
            f"mps listen on {host} (pid {ended.pid})",
            f"mps listen on {host} (pid {os.getpid()})",
            f"mps listen on elsewhere.example (pid {ended.pid})",
        )
    }

    # when listen starts
    async with Listening(service, ("--forward-to", receiver.url())) as listening:
        kept = {e["id"] for e in await service.endpoints()}

    # then only the dead relay's endpoint on this host is gone, and listen said so
    gone = left[f"mps listen on {host} (pid {ended.pid})"]
    assert kept == {*left.values(), listening.endpoint_id} - {gone}
    assert any(
        f"Deleted endpoint {gone} (left by pid {ended.pid}" in line for line in listening.err
    )


async def test_listen_routes_event_types_to_their_targets_first_match_winning(
    service: Service, receivers: tuple[Receiver, Receiver]
) -> None:
    # given payment.* to one receiver, payment.created to nobody else, the rest to another
    payments, others = receivers
    await service.login()
    key = await service.test_key()
    routes = ("--forward", f"payment.*={payments.url('/a')}")
    shadowed = ("--forward", f"payment.created={others.url('/never')}")
    async with Listening(service, (*routes, *shadowed, "--forward-to", others.url("/b"))):
        # when a payment is created and a ping sent
        await create_payment(service.client, service.member)
        ping = await service.cli("trigger", "webhook.ping", "--key", key)
        assert ping.status == 0, ping

        # then each went to its own target
        [created] = await payments.wait_for(1)
        [pinged] = await others.wait_for(1)
    assert created.path == "/a" and created.event["type"] == "payment.created"
    assert pinged.path == "/b" and pinged.event["type"] == "webhook.ping"
    assert len(payments.received) == 1 and len(others.received) == 1


async def test_listen_events_subscribes_to_what_the_service_takes_and_filters_the_rest(
    service: Service, receivers: tuple[Receiver, Receiver]
) -> None:
    # given a listen for `payment.comp*`, a glob the service's endpoints do not take
    receiver, _ = receivers
    await service.login()
    key = await service.test_key()
    args = ("--events", "payment.comp*", "--forward-to", receiver.url())
    async with Listening(service, args) as listening:
        [endpoint] = await service.endpoints()

        # when a payment is created, then completed
        payment = await create_payment(service.client, service.member)
        ran = await service.cli(
            "trigger", "payment.completed", "--key", key, "--payment-id", payment["id"]
        )
        assert ran.status == 0, ran

        # then both were delivered to the relay, and only payment.completed forwarded
        await _succeeded(service, listening.endpoint_id, 2)
        [received] = await receiver.wait_for(1)
    assert endpoint["events"] == ["payment.*"]
    assert received.event["type"] == "payment.completed"
    assert len(receiver.received) == 1
    assert not any("payment.created" in line for line in listening.lines)


async def test_listen_forwards_a_replayed_event_and_a_retry_after_the_target_failed(
    service: Service, receivers: tuple[Receiver, Receiver]
) -> None:
    # given a target that fails its first request
    receiver, _ = receivers
    receiver.answers = [500]
    await service.login()
    async with Listening(service, ("--forward-to", receiver.url())) as listening:
        # when an event is delivered, and then replayed
        await create_payment(service.client, service.member)
        first, retried = await receiver.wait_for(2)
        event_id = first.event["id"]
        await service.api("POST", f"/merchant/events/{event_id}/replay")

        # then the service retried the failure, and the replay reached the target too
        *_, replayed = await receiver.wait_for(3)
        lines = await listening.line_for(event_id, 3)
    assert retried.event["id"] == replayed.event["id"] == event_id
    assert first.headers["X-Service-Delivery-Id"] == retried.headers["X-Service-Delivery-Id"]
    assert replayed.headers["X-Service-Delivery-Id"] != first.headers["X-Service-Delivery-Id"]
    assert ["[500]" in line for line in lines] == [True, False, False]


async def test_listen_forwards_nothing_the_service_did_not_sign(
    service: Service, receivers: tuple[Receiver, Receiver]
) -> None:
    receiver, _ = receivers
    await service.login()
    async with Listening(service, ("--forward-to", receiver.url())):
        [endpoint] = await service.endpoints()

        # when anyone else posts to the relay's port
        async with ClientSession() as session:
            forged = await session.post(
                endpoint["url"],
                data=b'{"id": "evt_forged", "type": "payment.completed"}',
                headers={"X-Service-Signature": f"t={int(time.time())},v1=00"},
            )

    assert forged.status == 400
    assert receiver.received == []


async def test_listen_refuses_to_start_without_a_session_or_a_target(service: Service) -> None:
    no_session = await service.cli("listen", "--forward-to", "http://127.0.0.1:9/")
    await service.login()
    no_target = await service.cli("listen", "--events", "payment.*")

    assert no_session.status == 2 and "session" in no_session.err
    assert no_target.status == 2 and "--forward-to" in no_target.err
    assert await service.endpoints() == []


# -- the rules of patterns, without a service ---------------------------------------------------


@pytest.mark.parametrize(
    ("patterns", "subscribed"),
    [
        (["payment.completed", "refund.*"], ["payment.completed", "refund.*"]),
        (["payment.c*", "payment.f*"], ["payment.*"]),
        (["*.failed"], ["*"]),
        (["payment.*", "*"], ["*"]),
    ],
)
def test_subscription_keeps_what_the_service_takes_and_widens_other_globs(
    patterns: list[str], subscribed: list[str]
) -> None:
    assert subscription(patterns) == subscribed


def test_routing_takes_the_first_matching_route_then_the_default_within_events() -> None:
    routing = Routing(
        (Route("payment.*", "http://a"), Route("payment.created", "http://b")),
        "http://default",
        only=("payment.*", "refund.completed"),
    )

    assert routing.target("payment.created") == "http://a"
    assert routing.target("refund.completed") == "http://default"
    assert routing.target("refund.created") is None


def test_python_dash_m_mps_and_every_command_answer_help() -> None:
    import subprocess

    for args in (
        [],
        ["login"],
        ["payments", "create"],
        ["balance"],
        ["refunds", "create"],
        ["payouts", "cancel"],
        ["invoices", "get"],
        ["customers", "list"],
        ["events", "list"],
        ["webhooks", "list"],
        ["trigger"],
        ["listen"],
    ):
        ran = subprocess.run(
            [sys.executable, "-m", "mps", *args, "--help"],
            cwd=REPO,
            env={k: v for k, v in os.environ.items() if not k.startswith("MPS_")},
            capture_output=True,
            text=True,
            timeout=RUN_WITHIN,
            check=False,
        )
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.startswith("usage: mps")
