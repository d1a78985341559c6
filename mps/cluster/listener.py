"""Opening a node's peer listener: a second TCP site of the app's own runner, where other nodes
pass it the requests of the shards it owns (mps.cluster.peers, mps.http.forwarded)."""

from __future__ import annotations

import socket

from aiohttp import web

from mps.cluster.node import ClusterNode

__all__ = ["PeerListenError", "listen_for_peers"]


class PeerListenError(OSError):
    """The peer listener's address cannot be used (taken, or not this machine's)."""


async def listen_for_peers(
    runner: web.BaseRunner,
    node: ClusterNode,
    host: str,
    port: int = 0,
    advertise: str | None = None,
) -> web.BaseSite:
    """Listen on `host`:`port` (0: a free port) and tell `node`, which then names the address in
    its heartbeats: `advertise` as the host, or `host` unless it means every address."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        msg = f"cannot listen for peers on {host}:{port}: {exc.strerror or exc}"
        raise PeerListenError(msg) from None
    site = web.SockSite(runner, sock)
    await site.start()
    bound = sock.getsockname()[1]
    every = host in ("", "0.0.0.0", "::")  # noqa: S104 - recognised, not bound here
    node.serve_peers_at(
        advertise or (socket.gethostname() if every else host), bound, listening_on=host
    )
    return site
