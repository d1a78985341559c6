"""A rolling restart behind the balancer, under load, exactly as docs/operations.md "Rolling
restarts" says: `scripts/rolling-restart`.

    scripts/cluster --production        # one terminal: three production nodes behind nginx
    scripts/rolling-restart             # another: restart them one by one under load

Against the cluster `scripts/cluster --production` runs (its layout, var/cluster-production/
cluster.json), through its balancer only:

1. `--clients` companies sign up through the balancer (the code read from the mail relay's
   folder, as a person would read their mail) and each gets a session;
2. each client sends a steady stream through the balancer: keyed creates (`POST
   /merchant/payments`, a unique Idempotency-Key each) at `--rate` requests a second, every
   `--read-every`th a read of a payment it created (`GET /merchant/payments/{id}`), each on a
   schedule and never retried: what the client got is what is counted;
3. after `--warmup` seconds, each node in turn: SIGTERM, wait until it has exited, start it
   again (as scripts/cluster --production starts it: deploy/mps@.service's way), and wait until
   its `/api/v1/health/ready` answers 200 before the next;
4. `--cooldown` seconds later the load stops, and every company's payments are listed through
   the API: every create answered 201 must be stored exactly once (its id listed once, and no
   key's payment twice), and a create that got no answer is looked for too.

It prints a short report (`--json`: the same as one JSON object): requests sent, answered by
status, connection errors (refused, dropped, timed out), each restart's times, what is stored,
and what nginx did (requests it tried on a second node). The exit code is 0 when every request
was answered 2xx and every acknowledged create is stored once, 1 otherwise, and 2 with one line
saying why when the drill could not run to its end (no cluster, a node not ready, a restart
that failed, a sign-up refused).

The load stays under the production rate limits (600 session requests a minute per user: 8 a
second by default), which stay on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import secrets
import signal
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from email import message_from_bytes
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.cluster_layout import (
    ROOT,
    STOP_WITHIN,
    Layout,
    alive,
    is_ready,
    node_pid,
    start_node,
    wait_ready,
)

API = "/api/v1"
CODE = re.compile(r"sign-in code is (\d+)")
# Above nginx's proxy_read_timeout (35 s), so the balancer's answer, not ours, ends a request.
REQUEST_TIMEOUT = 40.0
READY_WITHIN = 120.0


@dataclass(frozen=True)
class Member:
    token: str
    company: str

    def headers(self, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", **extra}


@dataclass
class Sent:
    """One request and what the client got: a status, or the connection's error."""

    kind: str  # "create" or "read"
    key: str
    at: float  # seconds since the load started
    status: int | None = None
    error: str | None = None
    payment: str | None = None
    seconds: float = 0.0


@dataclass
class Restart:
    node: int
    old_pid: int
    new_pid: int
    at: float  # seconds since the load started, when SIGTERM was sent
    exited_after: float  # seconds from SIGTERM until the process was gone
    ready_after: float  # seconds from its start until /health/ready answered 200


@dataclass
class Stored:
    acknowledged: int = 0
    stored_once: int = 0
    missing: list[str] = field(default_factory=list)
    twice: list[str] = field(default_factory=list)
    unanswered: int = 0
    unanswered_stored: int = 0


# --- Signing up -------------------------------------------------------------------------------


def _code_in(mail: Path, email: str) -> str | None:
    """The sign-in code in the newest message to `email` that the relay kept, if one is there."""
    for path in sorted(mail.glob("*.eml"), reverse=True):
        message = message_from_bytes(path.read_bytes())
        # The service keeps (and mails) an address in lower case.
        if str(message["To"]).lower() == email.lower():
            body = message.get_payload(decode=True)
            found = CODE.search(body.decode("utf-8", "replace") if isinstance(body, bytes) else "")
            if found:
                return found.group(1)
    return None


async def _code_for(mail: Path, email: str, within: float = 30.0) -> str:
    deadline = time.monotonic() + within
    while (code := await asyncio.to_thread(_code_in, mail, email)) is None:
        if time.monotonic() > deadline:
            msg = f"no sign-in code for {email} in {mail} within {within:g} s"
            raise TimeoutError(msg)
        await asyncio.sleep(0.1)
    return code


async def sign_up(http: aiohttp.ClientSession, layout: Layout, email: str) -> Member:
    api = f"{layout.url}{API}"
    async with http.post(f"{api}/auth/signup", json={"companyName": "Drill", "email": email}) as r:
        if r.status != 201:
            msg = f"sign-up answered {r.status}: {await r.text()}"
            raise RuntimeError(msg)
        signup = await r.json()
    code = await _code_for(layout.mail, email)
    verify = {"loginId": signup["loginId"], "code": code}
    async with http.post(f"{api}/auth/otp/verify", json=verify) as r:
        if r.status != 200:
            msg = f"verify answered {r.status}: {await r.text()}"
            raise RuntimeError(msg)
        session = await r.json()
    return Member(session["sessionToken"], signup["companyId"])


# --- The load ---------------------------------------------------------------------------------


def _error_name(exc: BaseException) -> str:
    if isinstance(exc, aiohttp.ClientConnectorError):
        return "refused"
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientPayloadError):
        return "dropped"
    if isinstance(exc, TimeoutError):
        return "timed out"
    return type(exc).__name__


async def _send(
    http: aiohttp.ClientSession, method: str, url: str, sent: Sent, **kwargs: Any
) -> dict[str, Any] | None:
    started = time.monotonic()
    try:
        async with http.request(method, url, **kwargs) as response:
            sent.status = response.status
            body: dict[str, Any] = await response.json(content_type=None)
            return body
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        if sent.status is None:
            sent.error = _error_name(exc)
        return None
    finally:
        sent.seconds = time.monotonic() - started


async def client(
    http: aiohttp.ClientSession,
    layout: Layout,
    member: Member,
    run: str,
    index: int,
    rate: float,
    read_every: int,
    origin: float,
    stop: asyncio.Event,
    log: list[Sent],
) -> None:
    """One client's stream: a request every 1/rate seconds, on a schedule (a slow answer does
    not push the next one back, unless it is still waiting for it)."""
    url = f"{layout.url}{API}/merchant/payments"
    created: list[str] = []
    due = time.monotonic()
    number = 0
    while not stop.is_set():
        number += 1
        at = time.monotonic() - origin
        if read_every and number % read_every == 0 and created:
            payment = random.choice(created)
            sent = Sent("read", payment, at)
            log.append(sent)
            await _send(http, "GET", f"{url}/{payment}", sent, headers=member.headers())
        else:
            key = f"{run}-{index}-{number}"
            sent = Sent("create", key, at)
            log.append(sent)
            body = await _send(
                http,
                "POST",
                url,
                sent,
                json={"amountMinor": "1250", "currency": "USD", "description": key},
                headers=member.headers(**{"Idempotency-Key": key}),
            )
            if sent.status == 201 and body is not None:
                sent.payment = body["id"]
                created.append(body["id"])
        due += 1 / rate
        await asyncio.sleep(max(0.0, due - time.monotonic()))


# --- The restarts -----------------------------------------------------------------------------


def restart(layout: Layout, node: int, origin: float) -> Restart:
    """docs/operations.md, "Rolling restarts", for one node: SIGTERM, wait until it exits, start
    it again, wait until its /api/v1/health/ready answers 200."""
    pid = node_pid(layout, node)
    if pid is None or not alive(pid):
        msg = f"node{node} is not running (no live node's pid in {layout.pid_file(node)})"
        raise RuntimeError(msg)
    signalled = time.monotonic()
    # Readiness answers 503 at once; the grace, the hand-over, then the exit.
    os.kill(pid, signal.SIGTERM)
    while alive(pid):
        if time.monotonic() - signalled > STOP_WITHIN:
            msg = f"node{node} (pid {pid}) still running {STOP_WITHIN:g} s after SIGTERM"
            raise RuntimeError(msg)
        time.sleep(0.05)
    exited = time.monotonic()
    process = start_node(layout, node)
    wait_ready(layout.node_url(node), READY_WITHIN, lambda: process.poll() is None)
    return Restart(
        node=node,
        old_pid=pid,
        new_pid=process.pid,
        at=round(signalled - origin, 2),
        exited_after=round(exited - signalled, 2),
        ready_after=round(time.monotonic() - exited, 2),
    )


# --- The check --------------------------------------------------------------------------------


async def listed(http: aiohttp.ClientSession, layout: Layout, member: Member) -> list[dict]:
    """Every payment of the member's company, through the balancer, page by page."""
    payments: list[dict] = []
    cursor: str | None = None
    while True:
        params = {"limit": "100", **({"cursor": cursor} if cursor else {})}
        async with http.get(
            f"{layout.url}{API}/merchant/payments", params=params, headers=member.headers()
        ) as response:
            if response.status != 200:
                msg = f"listing answered {response.status}: {await response.text()}"
                raise RuntimeError(msg)
            page = await response.json()
        payments += page["data"]
        cursor = page.get("nextCursor")
        if not cursor:
            return payments


def stored(log: list[Sent], payments: list[dict]) -> Stored:
    ids = Counter(payment["id"] for payment in payments)
    keys = Counter(payment.get("description") for payment in payments)
    found = Stored()
    for sent in log:
        if sent.kind != "create":
            continue
        if sent.status == 201:
            found.acknowledged += 1
            if sent.payment is not None and ids[sent.payment] == 1 and keys[sent.key] == 1:
                found.stored_once += 1
            elif keys[sent.key] > 1:
                found.twice.append(sent.key)
            else:
                found.missing.append(sent.key)
        elif sent.status is None or sent.status >= 500:
            # No answer, or one that says the outcome is unknown: it may have run.
            found.unanswered += 1
            found.unanswered_stored += min(keys[sent.key], 1)
            if keys[sent.key] > 1:
                found.twice.append(sent.key)
    return found


def balancer_retries(access_log: Path, offset: int) -> dict[str, int]:
    """From nginx's access lines written since `offset`: requests it sent to more than one
    node (a refused connection, then the next), and its answers by status."""
    try:
        with access_log.open("rb") as stream:
            stream.seek(offset)
            lines = stream.read().decode("utf-8", "replace").splitlines()
    except FileNotFoundError:
        return {}
    tried_again = sum(1 for line in lines if re.search(r'upstream="[^"]*,', line))
    return {"lines": len(lines), "triedAnotherNode": tried_again}


# --- The drill --------------------------------------------------------------------------------


def _cluster_ready(layout: Layout) -> None:
    for node in range(1, layout.nodes + 1):
        pid = node_pid(layout, node)
        if pid is None or not alive(pid) or not is_ready(layout.node_url(node)):
            msg = f"node{node} is not running and ready: start scripts/cluster --production first"
            raise RuntimeError(msg)
    if not is_ready(layout.url):
        msg = f"the balancer at {layout.url} does not answer ready"
        raise RuntimeError(msg)


async def drill(layout: Layout, args: argparse.Namespace) -> dict[str, Any]:
    _cluster_ready(layout)
    run = f"drill-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    access_log = layout.balancer / "access.log"
    offset = access_log.stat().st_size if access_log.exists() else 0
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        members = [
            await sign_up(http, layout, f"{run}-{index}@example.com")
            for index in range(args.clients)
        ]
        log: list[Sent] = []
        stop = asyncio.Event()
        origin = time.monotonic()
        clients = [
            asyncio.create_task(
                client(
                    http, layout, member, run, index, args.rate, args.read_every, origin, stop, log
                )
            )
            for index, member in enumerate(members)
        ]
        restarts: list[Restart] = []
        try:
            await asyncio.sleep(args.warmup)
            for node in range(1, layout.nodes + 1):
                done = await asyncio.to_thread(restart, layout, node, origin)
                restarts.append(done)
                print(
                    f"node{done.node}: exited {done.exited_after:.1f} s after SIGTERM, "
                    f"ready {done.ready_after:.1f} s after its start",
                    file=sys.stderr,
                    flush=True,
                )
            await asyncio.sleep(args.cooldown)
        finally:
            stop.set()
            await asyncio.gather(*clients)
        duration = time.monotonic() - origin
        payments = [p for member in members for p in await listed(http, layout, member)]
    found = stored(log, payments)
    statuses = Counter(str(sent.status) for sent in log if sent.status is not None)
    errors = Counter(sent.error for sent in log if sent.error is not None)
    latencies = sorted(sent.seconds for sent in log if sent.status is not None)
    return {
        "run": run,
        "date": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "nodes": layout.nodes,
        "balancer": f"{layout.balancer_kind} at {layout.url}",
        "clients": args.clients,
        "rate": args.rate,
        "seconds": round(duration, 1),
        "sent": len(log),
        "creates": sum(1 for sent in log if sent.kind == "create"),
        "reads": sum(1 for sent in log if sent.kind == "read"),
        "statuses": dict(sorted(statuses.items())),
        "connectionErrors": dict(errors),
        "p50": _quantile(latencies, 0.5),
        "p99": _quantile(latencies, 0.99),
        "max": round(latencies[-1], 3) if latencies else None,
        "restarts": [asdict(done) for done in restarts],
        "stored": asdict(found),
        "nginx": balancer_retries(access_log, offset) if layout.balancer_kind == "nginx" else {},
        "failures": [
            f"{sent.kind} {sent.key} at {sent.at:.1f} s: {sent.status or sent.error}"
            for sent in log
            if sent.status is None or not 200 <= sent.status < 300
        ][:20],
    }


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return round(values[min(len(values) - 1, int(q * len(values)))], 3)


def passed(result: dict[str, Any]) -> bool:
    answered_2xx = all(200 <= int(status) < 300 for status in result["statuses"])
    found = result["stored"]
    return (
        answered_2xx
        and not result["connectionErrors"]
        and found["acknowledged"] == found["stored_once"]
        and not found["twice"]
    )


def report(result: dict[str, Any]) -> str:
    found = result["stored"]
    errors = result["connectionErrors"]
    lines = [
        f"A rolling restart of {result['nodes']} nodes behind {result['balancer']}, "
        f"{result['clients']} clients at {result['rate']:g} requests/s each, {result['date']}",
        f"requests sent: {result['sent']} ({result['creates']} creates, {result['reads']} reads) "
        f"over {result['seconds']} s",
        "answered: "
        + ", ".join(f"{status} x{count}" for status, count in result["statuses"].items()),
        "connection errors: "
        + (", ".join(f"{name} x{count}" for name, count in errors.items()) if errors else "none"),
        f"latency: p50 {result['p50']} s, p99 {result['p99']} s, max {result['max']} s",
    ]
    for done in result["restarts"]:
        lines.append(
            f"node{done['node']}: SIGTERM at {done['at']} s, exited after "
            f"{done['exited_after']} s, ready {done['ready_after']} s after its start"
        )
    lines += [
        f"creates acknowledged: {found['acknowledged']}, stored exactly once: "
        f"{found['stored_once']}, missing: {len(found['missing'])}, stored twice: "
        f"{len(found['twice'])}",
        f"creates without an answer or with a 5xx: {found['unanswered']} "
        f"(stored: {found['unanswered_stored']})",
    ]
    if result["nginx"]:
        lines.append(
            f"nginx: {result['nginx']['triedAnotherNode']} requests tried on a second node"
        )
    lines += [f"  {failure}" for failure in result["failures"]]
    lines.append("PASS" if passed(result) else "FAIL")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/rolling-restart",
        description="Restart every node of scripts/cluster --production in turn, under load "
        "through its balancer, and check that nothing was lost (docs/operations.md).",
    )
    parser.add_argument(
        "--folder",
        default=os.environ.get("MPS_CLUSTER_DIR", str(ROOT / "var" / "cluster-production")),
        help="the cluster's folder (var/cluster-production)",
    )
    parser.add_argument("--clients", type=int, default=6, help="concurrent clients (6)")
    parser.add_argument("--rate", type=float, default=8.0, help="requests/s per client (8)")
    parser.add_argument("--read-every", type=int, default=5, help="every Nth request a read (5)")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds before the first (5)")
    parser.add_argument("--cooldown", type=float, default=5.0, help="seconds after the last (5)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    folder = Path(args.folder).absolute()
    try:
        layout = Layout.load(folder)
    except FileNotFoundError:
        return _fail(f"no cluster in {folder}: start scripts/cluster --production first")
    try:
        result = asyncio.run(drill(layout, args))
    except (RuntimeError, TimeoutError) as exc:
        # A node not running or not ready, a restart that failed, a sign-up refused (429 when
        # run again too soon): the drill cannot go on, and its report would mean nothing.
        return _fail(str(exc))
    except aiohttp.ClientError as exc:
        return _fail(f"the balancer at {layout.url} cannot be reached ({exc}): is the cluster up?")
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0 if passed(result) else 1


def _fail(why: str) -> int:
    """Say in one line why the drill did not run to its end; exit code 2 (1 is a drill that
    ran and found a failure)."""
    print(f"scripts/rolling-restart: {why}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
