"""Health (decisions 14): every service's state from a real probe, or `disabled` when the
service is not part of this build; nothing is reported up without being checked."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from mps.http.app import is_loopback_request
from mps.http.keys import API_VERSION
from mps.http.render import json_response
from mps.http.replies import Resource
from mps.http.resources import resource
from mps.http.routing import Auth, Call, Route
from mps.http.schema import Enum, Int, Map, Obj, Str
from mps.http.shutdown import SHUTDOWN
from mps.persistence.queries import ledger as ledger_queries
from mps.services import Services

__all__ = ["ROUTES"]

PROBE_TIMEOUT = 3.0
CRITICAL = ("database", "broker", "ledger")
# The ledger probe checks that its newest transactions balance on every call; the whole ledger's
# zero sum is checked by each reconciliation pass.
RECENT_TRANSACTIONS = 1000


async def _probe(check: Callable[[], Awaitable[None]]) -> dict[str, Any]:
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            await check()
    except Exception as exc:
        return {"status": "down", "detail": f"{type(exc).__name__}: {exc}"[:300]}
    return {"status": "up", "detail": "probe succeeded"}


async def _guarded(check: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            return await check()
    except Exception as exc:
        return {"status": "down", "detail": f"{type(exc).__name__}: {exc}"[:300]}


async def _ledger(services: Services) -> dict[str, Any]:
    recent = await ledger_queries.unbalanced(services.database, recent=RECENT_TRANSACTIONS)
    last = await services.reconciliation.latest()
    zero_sum = last.zero_sum if last is not None else 0
    if recent or zero_sum != 0:
        # Counts only: /health shows details to any signed-in member, and the transactions
        # named in the log belong to whichever companies they belong to.
        count = len(recent or (last.unbalanced if last is not None else []))
        return {
            "status": "down",
            "detail": f"postings sum to {zero_sum}; {count} unbalanced transactions (logged)",
        }
    whole = (
        "the ledger sums to 0"
        if last is not None
        else "the whole ledger's sum is being checked by the first pass since start"
    )
    return {
        "status": "up",
        "detail": f"the newest {RECENT_TRANSACTIONS} transactions balance; {whole}",
    }


async def _reconciliation(services: Services) -> dict[str, Any]:
    last = await services.reconciliation.latest()
    if last is None:
        return {"status": "degraded", "detail": "the first pass since start is still running"}
    age = asyncio.get_running_loop().time() - last.at
    if last.mismatches:
        checks = sorted({m.check for m in last.mismatches})
        return {
            "status": "degraded",
            "detail": f"{len(last.mismatches)} mismatches ({', '.join(checks)}), {age:.0f}s ago; "
            "logged in full",
        }
    return {"status": "up", "detail": f"no mismatch, {age:.0f}s ago"}


async def _object_storage(services: Services) -> dict[str, Any]:
    """A small object written, read back and deleted."""
    where = await services.objects.probe()
    return {"status": "up", "detail": f"round trip through {where}"}


async def service_states(services: Services) -> dict[str, dict[str, Any]]:
    (
        database,
        broker,
        webhooks,
        ledger,
        settlement,
        reconciliation,
        objects,
        verification,
    ) = await asyncio.gather(
        _probe(services.database.ping),
        _probe(services.broker.ping),
        _guarded(services.webhooks.probe),
        _guarded(lambda: _ledger(services)),
        _guarded(services.money.probe),
        _guarded(lambda: _reconciliation(services)),
        _guarded(lambda: _object_storage(services)),
        _guarded(services.kyc.probe),
    )
    states: dict[str, dict[str, Any]] = {
        "database": database,
        "broker": broker,
        "webhooks": webhooks,
        "ledger": ledger,
        "settlement": settlement,
        "reconciliation": reconciliation,
        "objectStorage": objects,
        "identityVerification": verification,
    }
    states["notifications"] = {
        "status": "up",
        "detail": "dev mailbox" if services.dev_mailbox is not None else "smtp configured",
    }
    states["fx"] = {"status": "disabled", "detail": "the service does not convert currencies"}
    return states


async def health(call: Call) -> web.Response:
    states = await service_states(call.services)
    critical = [states[name]["status"] for name in CRITICAL if states[name]["status"] != "disabled"]
    if all(s == "up" for s in critical):
        overall = (
            "up" if all(s["status"] in ("up", "disabled") for s in states.values()) else "degraded"
        )
    else:
        overall = "down"
    # Details are for signed-in members and loopback callers only (decisions 14).
    # Peer and Host both loopback: a page on another site, rebinding its name to 127.0.0.1 in a
    # developer's browser, reaches us from loopback but names its own host.
    detailed = is_loopback_request(call.request) or call.principal is not None
    if not detailed:
        states = {name: {"status": s["status"]} for name, s in states.items()}
    body: dict[str, Any] = {
        "ok": overall != "down",
        "requestId": call.request_id,
        "status": overall,
        "services": states,
    }
    if detailed:
        body["node"] = _node(call.services)
    status = 503 if overall == "down" else 200
    return json_response(status, body, call.request_id, call.request[API_VERSION])


async def live(call: Call) -> Resource:
    return Resource({"status": "up"})


def _node(services: Services) -> dict[str, Any]:
    """This node: its name, the shards it owns, and in a cluster the other nodes it hears from
    and the round trip of its last heartbeat through the broker."""
    cluster = services.cluster
    owned = sorted(services.shards.owned)
    if cluster is None:
        return {"id": services.settings.node_id, "clustered": False, "shards": len(owned)}
    trip = cluster.round_trip
    return {
        "id": cluster.node_id,
        "clustered": True,
        "joined": cluster.joined,
        "draining": cluster.draining,
        "shards": len(owned),
        "ownedShards": owned,
        "nodesSeen": [
            {"id": h.node, "shards": len(h.owned), "draining": h.draining}
            for h in cluster.membership.others(time.monotonic())
        ],
        "brokerRoundTripMs": None if trip is None else round(trip * 1000, 2),
    }


async def ready(call: Call) -> web.Response:
    """Ready to take traffic: storage and broker answer, and the node serves its shards (a
    single process owns them all; a cluster node has joined every shard queue and is not
    draining, and serves even before it owns a shard, by passing requests on). From SIGTERM on,
    not ready, though the node still serves for its grace period (mps.serve): that is how a
    balancer learns to send nothing more here before the listener closes."""
    states = await service_states(call.services)
    cluster = call.services.cluster
    serving = (
        bool(call.services.shards.owned)
        if cluster is None
        else cluster.joined and not cluster.draining
    )
    shutdown = call.request.app.get(SHUTDOWN)
    if shutdown is not None and shutdown.requested:
        serving = False
    is_ready = (
        states["database"]["status"] == "up" and states["broker"]["status"] == "up" and serving
    )
    body = {
        "ok": is_ready,
        "requestId": call.request_id,
        "status": "ready" if is_ready else "not_ready",
        "shards": len(call.services.shards.owned),
    }
    return json_response(200 if is_ready else 503, body, call.request_id, call.request[API_VERSION])


_STATE = Obj(
    {"status": Enum(["up", "degraded", "down", "disabled"]), "detail": Str()}, required=["status"]
)

ROUTES = [
    Route(
        "GET",
        "/health",
        health,
        "State of every service, from real probes",
        "health",
        Auth.OPTIONAL_SESSION,
        response=resource(
            {"status": Enum(["up", "degraded", "down"]), "services": Map(values=_STATE)}
        ),
    ),
    Route(
        "GET",
        "/health/live",
        live,
        "Liveness: the event loop answers",
        "health",
        Auth.PUBLIC,
        response=resource({"status": Str()}),
    ),
    Route(
        "GET",
        "/health/ready",
        ready,
        "Readiness: database and broker connected, shards served",
        "health",
        Auth.PUBLIC,
        response=resource({"status": Enum(["ready", "not_ready"]), "shards": Int()}),
    ),
]
