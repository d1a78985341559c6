"""The middleware that counts every request and times it (mps.metrics: the HTTP series).

Outermost, so it sees every answer the app gives, the envelope's errors and aiohttp's own 404 and
405 included, and times the whole of the app's work on the request (not the writing of the
response to the socket, which happens after it returns). A request whose client goes away
before the answer is counted with status 499, as proxies log it.

Per request it costs a dictionary lookup, one counter increment and one histogram observation:
the label children are looked up once per (route, method, status) and kept, since resolving them
through `labels()` is the expensive part of the client library. The keys are bounded: `route` is
the canonical route path or `unmatched`, `method` is a known method or `other`, and the status
is a number below 600.

A request passed to its shard's owner (mps.http.passing marks it) is also counted by outcome
and timed on its own; one another node passed here (mps.http.forwarded marks what came in on
the peer listener) is counted by outcome: a few dictionary reads more, on those requests only.
"""

from __future__ import annotations

import asyncio
from time import perf_counter

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from prometheus_client import Counter, Histogram

from mps.http.forwarded import NOT_RUN_HERE, PEER_CALL
from mps.http.keys import PASSED, RELAYED
from mps.http.passing import PASSED_OUT
from mps.metrics import HTTP_METHODS, Metrics

__all__ = ["request_metrics"]

# A client that closed the connection before its answer (nginx's number for it).
CLIENT_GONE = 499
SERVICE_UNAVAILABLE = 503


def request_metrics(metrics: Metrics) -> Middleware:
    """The middleware recording into `metrics`."""
    children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}

    def record(request: web.Request, status: int, took: float) -> None:
        resource = request.match_info.route.resource
        route = "unmatched" if resource is None else resource.canonical
        method = request.method if request.method in HTTP_METHODS else "other"
        key = (route, method, status)
        series = children.get(key)
        if series is None:
            series = children[key] = (
                metrics.http_requests.labels(route, method, str(status)),
                metrics.http_seconds.labels(route, method),
            )
        series[0].inc()
        series[1].observe(took)

    def record_passing(
        request: web.Request, response: web.StreamResponse | None, status: int, took: float
    ) -> None:
        if request.get(PASSED_OUT):
            if response is not None and response.get(RELAYED):
                outcome = "answered"
            elif status == SERVICE_UNAVAILABLE:
                outcome = "unavailable"
            else:
                outcome = "error"
            metrics.passed_requests.labels(outcome).inc()
            metrics.passed_seconds.observe(took)
        elif request.get(PEER_CALL):
            if not request.get(PASSED):
                outcome = "refused"
            elif request.get(NOT_RUN_HERE):
                outcome = "not_run"
            else:
                outcome = "ran"
            metrics.peer_requests.labels(outcome).inc()

    @web.middleware
    async def count_request(request: web.Request, handler: Handler) -> web.StreamResponse:
        started = perf_counter()
        try:
            response = await handler(request)
        except asyncio.CancelledError:
            took = perf_counter() - started
            record(request, CLIENT_GONE, took)
            record_passing(request, None, CLIENT_GONE, took)
            raise
        except Exception as exc:
            # Only when a middleware inside ours lets an error through: aiohttp answers 500,
            # or the status of an HTTP exception.
            took = perf_counter() - started
            status = getattr(exc, "status", 500)
            record(request, status, took)
            record_passing(request, None, status, took)
            raise
        took = perf_counter() - started
        record(request, response.status, took)
        record_passing(request, response, response.status, took)
        return response

    return count_request
