"""Fault injection: one fault at a time, in a seeded order that gives each kind a turn, each
followed by a wait for the shards to balance again; and, at the end, every node brought back.

A node's own Postgres and broker connections are found through its sockets in /proc (Linux),
so `pg` and `broker` cut exactly that node's connections and nobody else's."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from pathlib import Path

import asyncpg

from bench.chaos.options import HEARTBEAT, OWN_SERVER_FAULTS, Options
from bench.chaos.report import Report
from bench.chaos.servers import Servers
from tests.cluster import LocalCluster


class Faults:
    """Runs from the suite's event loop beside the workload; the blocking cluster calls (kill,
    start, wait for balance) go to a thread so the workers keep running meanwhile."""

    def __init__(
        self, cluster: LocalCluster, servers: Servers, report: Report, options: Options
    ) -> None:
        self.cluster = cluster
        self.servers = servers
        self.report = report
        self.options = options
        self.rng = random.Random(options.seed)

    async def run(self, started: float) -> None:
        """Faults one at a time until the duration is over and every kind had a turn."""
        order = list(self.options.faults)
        self.rng.shuffle(order)
        turn = 0
        while order and (
            time.monotonic() - started < self.options.duration
            or any(self.report.faults[k] == 0 for k in order)
        ):
            await asyncio.sleep(self.rng.uniform(1.0, 3.0))
            kind = order[turn % len(order)]
            turn += 1
            node = self.rng.randrange(self.options.nodes)
            at = time.monotonic() - started
            target = "" if kind in OWN_SERVER_FAULTS else f" node{node + 1}"
            try:
                detail = await self._inject(kind, node)
            except RuntimeError as exc:
                # Not the service's fault (a node between restarts may hold no connection yet):
                # shown in the fault log, and the kind gets another turn.
                self.report.fault_log.append(f"{at:6.1f}s {kind}{target}: not injected: {exc}")
                self.report.faults_missed[kind] += 1
                if self.report.faults_missed[kind] >= 3 and self.report.faults[kind] == 0:
                    order.remove(kind)  # it will not work here: do not wait for its turn
                continue
            self.report.faults[kind] += 1
            took = await balanced(self.cluster, self.report, self.options.settle)
            again = "never" if took is None else f"in {took:.1f}s"
            self.report.fault_log.append(
                f"{at:6.1f}s {kind}{target}: {detail}; balanced again {again}"
            )
            self.options.progress(f"fault {kind}{target}: {detail}")

    async def _inject(self, kind: str, index: int) -> str:
        """One fault; what was done, or RuntimeError when it could not be done."""
        node = self.cluster.nodes[index]
        if kind == "kill":
            await asyncio.to_thread(node.kill)
            down = self.rng.uniform(0.5, 3.0)
            await asyncio.sleep(down)
            for attempt in range(3):
                try:
                    await asyncio.to_thread(node.start)
                    break
                except AssertionError as exc:
                    self.report.violate(
                        "cluster recovers", f"node{index + 1} did not restart", str(exc)[-2000:]
                    )
                    if attempt == 2:
                        raise RuntimeError(str(exc)[-300:]) from None
            return f"SIGKILL, restarted after {down:.1f}s"
        if kind == "stop":
            paused = self.rng.uniform(2.5 * HEARTBEAT, 4.0 * HEARTBEAT)
            self.cluster.pause(index)
            try:
                await asyncio.sleep(paused)
            finally:
                self.cluster.resume(index)
            return f"SIGSTOP for {paused:.1f}s, then SIGCONT"
        if kind == "pg":
            return await self._terminate_backends(node.pid)
        if kind == "broker":
            return await self._close_broker_connections(node.pid)
        if kind == "pg-restart":
            return await self.servers.restart_postgres()
        if kind == "broker-restart":
            return await self.servers.restart_rabbitmq()
        msg = f"unknown fault {kind}"
        raise RuntimeError(msg)

    async def _terminate_backends(self, pid: int) -> str:
        ports = _socket_ports(pid, self.servers.pg_port)
        if not ports:
            msg = "the node holds no Postgres connection"
            raise RuntimeError(msg)
        conn = await asyncpg.connect(self.servers.pg_url.split("?")[0])
        try:
            rows = await conn.fetch(
                "SELECT pid, pg_terminate_backend(pid) AS done FROM pg_stat_activity "
                "WHERE client_port = ANY($1::int[]) AND client_addr = '127.0.0.1'",
                ports,
            )
        finally:
            await conn.close()
        return f"pg_terminate_backend on {sum(1 for r in rows if r['done'])} of its backends"

    async def _close_broker_connections(self, pid: int) -> str:
        ports = set(_socket_ports(pid, self.servers.broker_port))
        if not ports:
            msg = "the node holds no broker connection"
            raise RuntimeError(msg)
        # close_connection takes the connection's Erlang pid, listed beside the client's port.
        listed = await self.servers.rabbitmqctl(
            "list_connections", "-q", "--no-table-headers", "pid", "peer_port"
        )
        connections = []
        for line in listed.splitlines():
            connection, _, port = line.strip().partition("\t")
            if port.strip().isdigit() and int(port) in ports:
                connections.append(connection.strip())
        if not connections:
            msg = f"the broker lists none of the node's connections (ports {sorted(ports)})"
            raise RuntimeError(msg)
        for connection in connections:
            await self.servers.rabbitmqctl(
                "close_connection", connection, "chaos: closed on purpose"
            )
        return f"rabbitmqctl close_connection on {len(connections)} of its connections"


async def recover(cluster: LocalCluster, report: Report, options: Options) -> None:
    """Every node running and resumed, and the shards balanced over all of them; a node that
    exited by itself is a violation (and is started again, so the checks can read from it)."""
    for index, node in enumerate(cluster.nodes):
        if node.process.poll() is None:
            cluster.resume(index)
        else:
            report.violate(
                "cluster recovers",
                f"node{index + 1} had exited by itself (status {node.process.returncode})",
                *node.log_text().splitlines()[-5:],
            )
            await asyncio.to_thread(node.kill)
            await asyncio.to_thread(node.start)
    await balanced(cluster, report, options.settle, " at the end")


async def balanced(
    cluster: LocalCluster, report: Report, within: float, when: str = ""
) -> float | None:
    """Seconds until every shard had one owner again; None, and a violation, if that did not
    happen within `within` seconds."""
    try:
        return await asyncio.to_thread(cluster.wait_balanced, within)
    except AssertionError as exc:
        report.violate("cluster recovers", f"the shards did not balance{when}", str(exc))
        return None


def _socket_ports(pid: int, remote_port: int) -> list[int]:
    """The local ports of process `pid`'s established TCP connections to `remote_port` on
    loopback: how a node's own database and broker connections are found."""
    inodes: dict[str, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
                if state == "01" and int(remote.rsplit(":", 1)[1], 16) == remote_port:
                    inodes[f"socket:[{inode}]"] = int(local.rsplit(":", 1)[1], 16)
    ports = []
    with contextlib.suppress(OSError):
        for descriptor in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{descriptor}")
                if target in inodes:
                    ports.append(inodes[target])
    return sorted(ports)
