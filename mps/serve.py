"""Serving the application until a signal, then stopping it cleanly.

A start that fails (a resource that cannot be opened) closes what it had opened and raises.

SIGTERM or SIGINT: `/health/ready` answers 503 at once, and the listener goes on serving for
`MPS_SHUTDOWN_GRACE` seconds (5 in production, 0 in development), so that a balancer checking
readiness sends nothing more here before the listener closes, and no request meets a refused
connection. A second signal ends the grace at once. Then in a cluster the node hands every
shard over (finishing the work in flight; requests that arrive meanwhile are passed to the new
owners), then stops listening, finishes the requests it is still serving, and closes its
resources. A single process skips the hand-over.

A node of a cluster also listens on its peer port (`MPS_PEER_PORT`) for the requests other
nodes pass to it (mps.cluster.peers).

A worker of `run.py --workers N` (mps.workers) listens with `reuse_port`: the N workers bind the
same public port (SO_REUSEPORT), and the kernel spreads new connections over them. Given its own
port too (`MPS_WORKER_PORT`, which the supervisor sets per worker), a worker also serves the
public app there alone, so a balancer can reach this worker in particular; a single node ignores
the setting. Both listeners close together, after the grace and the hand-over.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
from typing import Any

from aiohttp import web

from mps.cluster.listener import PeerListenError, listen_for_peers
from mps.composition.serving import log_listening
from mps.config import Settings
from mps.http.keys import SERVICES
from mps.http.metrics_listener import MetricsListenError
from mps.http.shutdown import SHUTDOWN

__all__ = ["ListenError", "serve"]

logger = logging.getLogger(__name__)
# Tracked allocations, net of deallocations, between two collections of the young generation.
YOUNG_COLLECTION_THRESHOLD = 10_000


class ListenError(Exception):
    """The address to listen on cannot be used (taken, or not this machine's)."""


async def serve(
    app: web.Application, settings: Settings, *, reuse_port: bool = False, **server: Any
) -> None:
    runner = web.AppRunner(app, handle_signals=False, **server)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        # Opens the app's resources in order (mps.bootstrap); if one fails, the cleanup below
        # closes those already open before the error goes on.
        try:
            await runner.setup()
        except MetricsListenError as exc:
            raise ListenError(str(exc)) from None
        try:
            await web.TCPSite(runner, settings.host, settings.port, reuse_port=reuse_port).start()
        except OSError as exc:
            msg = f"cannot listen on {settings.host}:{settings.port}: {exc.strerror or exc}"
            raise ListenError(msg) from None
        if reuse_port and settings.worker_port:
            await _listen_on_own_port(runner, settings.host, settings.worker_port)
        log_listening(settings)
        cluster = app[SERVICES].cluster
        if cluster is not None:
            try:
                await listen_for_peers(
                    runner,
                    cluster,
                    settings.peer_host or settings.host,
                    settings.peer_port,
                    settings.peer_advertise,
                )
            except PeerListenError as exc:
                raise ListenError(str(exc)) from None
        # What start-up made (modules, the route table, settings) lives as long as the process;
        # left to the collector, each full collection walks it again for nothing, a 35-70 ms
        # pause every couple of seconds under load (bench/RESULTS.md, "Analytics").
        gc.collect()
        gc.freeze()
        # A request or a delivery allocates hundreds of short-lived containers (futures, rows,
        # headers), so at the default threshold (700) the young generation is collected about
        # every request, and each of those promotes survivors that later cost full collections
        # of 30-40 ms. At 10,000 the collector took 13-15% of the CPU of a create or a delivery
        # before and 1-7% after, with no full collection in a run (bench/RESULTS.md, "16 POSTs
        # in flight per endpoint, and the collector's threshold").
        gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])
        await stop.wait()
        await _grace(app, stop, settings.shutdown_grace)
        logger.info("stopping")
        if cluster is not None:
            await cluster.drain()
    finally:
        await runner.cleanup()


async def _listen_on_own_port(runner: web.AppRunner, host: str, port: int) -> None:
    """A worker's own port, besides the one the workers share: bound without SO_REUSEPORT,
    so a port another process holds is refused rather than shared with it."""
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as exc:
        msg = f"cannot listen on {host}:{port} (MPS_WORKER_PORT): {exc.strerror or exc}"
        raise ListenError(msg) from None
    logger.info("this worker's own port: listening on http://%s:%d too", host, port)


async def _grace(app: web.Application, stop: asyncio.Event, grace: float) -> None:
    """Report not ready, and go on serving for `grace` seconds or until the next signal."""
    shutdown = app.get(SHUTDOWN)
    if shutdown is not None:
        shutdown.request()
    if grace <= 0:
        return
    logger.info(
        "stopping: /health/ready answers 503; serving %g s more (MPS_SHUTDOWN_GRACE), "
        "or until another SIGTERM or SIGINT",
        grace,
    )
    stop.clear()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(grace):
            await stop.wait()
