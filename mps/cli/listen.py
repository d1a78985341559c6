"""`mps listen`: the company's webhook deliveries, relayed to a URL on this machine.

The relay is an ordinary webhook endpoint of the service: a small aiohttp receiver on
127.0.0.1 (an ephemeral port), registered with `POST /merchant/webhooks` for the session's
company and mode. Development mode lets an endpoint name loopback, at registration
(`mps.http.targets`) and at delivery (`mps.webhooks.targets.GuardedResolver`); production
refuses it, so `listen` works against a development service on this machine only.

Each delivery is checked against the endpoint's secret, so nothing but the service can make
the relay forward (any local process can reach its port). It is then POSTed to its target
with its raw body and its signature headers unchanged, so the target verifies it with the
secret `--print-secret` shows, exactly as it would verify the service. The service gets the
target's status (and `Retry-After`, `webhook-delivery`), so a failing target is retried on the
service's schedule, and replays and recoveries reach the target as they would in production.

On SIGINT or SIGTERM the endpoint is deleted. A relay killed outright (SIGKILL) leaves its
endpoint behind, failing; the next `listen` on this machine deletes it before registering its
own: an endpoint whose description names a relay on this host whose process is gone. Until then
(or when the relay ran on another host) it can be deleted with `DELETE /merchant/webhooks/:id`,
and the service disables it after five days of failures.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from datetime import datetime
from typing import Any, TextIO

import aiohttp
import orjson
from aiohttp import web

from mps.cli.client import Api
from mps.cli.errors import CliError
from mps.cli.patterns import Routing
from mps.webhooks import SignatureError, verify_signature

__all__ = ["FORWARD_TIMEOUT", "Relay", "listen"]

# The service gives up on an attempt after 10 s; answering it a little sooner lets the relay
# say what happened (a timeout, as 504) rather than be cut off mid-line.
FORWARD_TIMEOUT = 9.0
# How long a delivery that arrives before the endpoint's secret is known waits for it.
_SECRET_WAIT = 10.0
_PATH = "/mps-listen"
# Request headers passed on besides every `X-Service-*` and `webhook-*` one.
_PASSED_ON = frozenset({"content-type", "user-agent"})
# Answer headers the service's sender reads, handed back to it unchanged.
_PASSED_BACK = ("Retry-After", "webhook-delivery")


class Relay:
    """The receiver's handler: verify, forward, answer with the target's status.

    Runs on the listen command's event loop; deliveries are handled concurrently (the service
    sends up to MPS_WEBHOOK_CONCURRENCY, 16 by default, at once to one endpoint), each line
    written whole.
    """

    def __init__(self, routing: Routing, out: TextIO, err: TextIO) -> None:
        self._routing = routing
        self._out = out
        self._err = err
        self._secret: str | None = None
        self._secret_known = asyncio.Event()
        self._forwarder: aiohttp.ClientSession | None = None

    def know_secret(self, secret: str) -> None:
        self._secret = secret
        self._secret_known.set()

    async def start(self) -> None:
        self._forwarder = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=FORWARD_TIMEOUT),
            # The body is passed on byte for byte; nothing may be added that the signature
            # does not cover, or decompressed on the way back.
            auto_decompress=False,
            skip_auto_headers=("Accept-Encoding",),
        )

    async def close(self) -> None:
        if self._forwarder is not None:
            await self._forwarder.close()
            self._forwarder = None

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        try:
            async with asyncio.timeout(_SECRET_WAIT):
                await self._secret_known.wait()
        except TimeoutError:
            return web.Response(status=503, text="not ready")
        assert self._secret is not None
        try:
            verify_signature(body, request.headers.get("X-Service-Signature", ""), self._secret)
        except SignatureError as exc:
            self._say(f"refused a request to the relay that the service did not sign: {exc}")
            return web.Response(status=400, text="bad signature")
        event = _event(body)
        event_type = str(event.get("type") or "?")
        event_id = str(event.get("id") or request.headers.get("X-Service-Event-Id", "?"))
        target = self._routing.target(event_type)
        if target is None:
            # Subscribed to a family wider than the patterns asked for: taken, not forwarded,
            # so the service does not retry it.
            return web.Response(status=204)
        status, back, note = await self._forward(target, body, request)
        self._line(event_type, event_id, target, status, note)
        if status == 410:
            self._say(
                "the target answered 410 Gone, so the service has disabled this endpoint;"
                " restart mps listen to receive events again"
            )
        return web.Response(status=status, headers=back)

    async def _forward(
        self, target: str, body: bytes, request: web.Request
    ) -> tuple[int, dict[str, str], str]:
        assert self._forwarder is not None
        headers = {
            name: value
            for name, value in request.headers.items()
            if name.lower() in _PASSED_ON or name.lower().startswith(("x-service-", "webhook-"))
        }
        try:
            async with self._forwarder.post(
                target, data=body, headers=headers, allow_redirects=False
            ) as response:
                # A little of the answer, so the connection can be reused; never all of it.
                await response.content.read(1024)
                back = {h: response.headers[h] for h in _PASSED_BACK if h in response.headers}
                return response.status, back, ""
        except TimeoutError:
            return 504, {}, f"no answer within {FORWARD_TIMEOUT:g} s"
        except aiohttp.ClientConnectorError as exc:
            return 502, {}, f"cannot connect: {exc.os_error.strerror or exc.os_error}"
        except (aiohttp.ClientError, OSError) as exc:
            return 502, {}, f"{type(exc).__name__}: {exc}"

    def _line(self, event_type: str, event_id: str, target: str, status: int, note: str) -> None:
        at = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S")
        tail = f"  ({note})" if note else ""
        self._out.write(f"{at}  {event_type}  {event_id}  -> {target}  [{status}]{tail}\n")
        self._out.flush()

    def _say(self, message: str) -> None:
        self._err.write(f"mps listen: {message}\n")
        self._err.flush()


def _event(body: bytes) -> dict[str, Any]:
    try:
        event = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    return event if isinstance(event, dict) else {}


async def listen(
    api: Api,
    routing: Routing,
    *,
    print_secret: bool,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Relay until SIGINT or SIGTERM; the exit status. `api` carries the session."""
    relay = Relay(routing, out, err)
    await relay.start()
    app = web.Application()
    app.router.add_post(_PATH, relay.handle)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        # A socket of our own, so the port the kernel picked is known before registering.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        site = web.SockSite(runner, sock)
        await site.start()
        url = f"http://127.0.0.1:{sock.getsockname()[1]}{_PATH}"
        stop = _stop_on_signals()
        await _delete_left_behind(api, err)
        endpoint = await api.call(
            "POST",
            "/merchant/webhooks",
            body={"url": url, "events": routing.subscription(), "description": _description()},
        )
        relay.know_secret(endpoint["secret"])
        try:
            if print_secret:
                out.write(f"{endpoint['secret']}\n")
                out.flush()
            err.write(
                f"Ready: relaying {', '.join(endpoint['events'])} through {endpoint['id']}"
                f" ({'live' if endpoint.get('livemode') else 'test'} mode). Ctrl-C to stop.\n"
            )
            err.flush()
            await stop.wait()
        finally:
            await _delete(api, endpoint["id"], err)
    finally:
        await runner.cleanup()
        await relay.close()
    return 0


def _description() -> str:
    """What names a relay's endpoint: this host and the relay's process."""
    return f"{_on_this_host()}{os.getpid()})"


def _on_this_host() -> str:
    return f"mps listen on {socket.gethostname()} (pid "


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # a process of another user: alive
    return False


async def _delete_left_behind(api: Api, err: TextIO) -> None:
    """Delete the endpoints of relays on this host whose process is gone (killed outright)."""
    prefix = _on_this_host()
    query: dict[str, str] = {"limit": "100"}
    while True:
        page = await api.call("GET", "/merchant/webhooks", query=query)
        for endpoint in page["data"]:
            described = endpoint.get("description") or ""
            pid = described.removeprefix(prefix).removesuffix(")")
            if described.startswith(prefix) and pid.isdigit() and _gone(int(pid)):
                await _delete(api, endpoint["id"], err, why=f" (left by pid {pid}, which is gone)")
        if not page.get("nextCursor"):
            return
        query = {**query, "cursor": page["nextCursor"]}


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    return stop


async def _delete(api: Api, endpoint_id: str, err: TextIO, why: str = "") -> None:
    try:
        await api.call("DELETE", f"/merchant/webhooks/{endpoint_id}")
    except CliError as exc:
        # Raised again so the command exits non-zero, after saying what is left behind.
        err.write(f"mps listen: could not delete endpoint {endpoint_id}: {exc}\n")
        raise
    err.write(f"Deleted endpoint {endpoint_id}{why}.\n")
    err.flush()
