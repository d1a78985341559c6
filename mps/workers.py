"""All the cores of a host: `run.py --workers N` (MPS_WORKERS) runs N cluster members here.

One Python process uses one core. With `--workers N` the process run.py starts becomes the
workers' supervisor: it serves nothing itself, and starts N workers, each `run.py` again with
the same options as one node of a cluster (mps.cluster), so the workers share the shards as
nodes on different hosts do and pass a request to its shard's owner over the direct peer hop.
They need what a cluster's nodes share, Postgres and RabbitMQ (mps.config refuses the rest).

What each worker is given:

- the same public port, bound with SO_REUSEPORT (mps.serve), so the kernel spreads new
  connections over the workers; the supervisor first checks that nothing else holds the port,
  since a socket of this user bound with SO_REUSEPORT would otherwise share it silently;
- a node id of its own, `<node id>-w<i>` (the node id being MPS_NODE_ID, or this host's name and
  the supervisor's pid), kept across its restarts;
- a peer port of its own: MPS_PEER_PORT + i - 1, or any free port when MPS_PEER_PORT is unset;
  and MPS_METRICS_PORT + i - 1 when a metrics port is set;
- when MPS_WORKER_PORT is set, a public port of its own besides the shared one,
  MPS_WORKER_PORT + i - 1 (mps.serve): the kernel picks a worker at random for a connection to
  the shared port, so (N-1)/N of the requests land on a worker that does not own their
  company's shard and are passed on, while a shard-aware balancer can send each request to its
  owner's own port (docs/cluster.md, "Balancing");
- the cluster's secret: MPS_CLUSTER_SECRET, or one the supervisor generates for this run when it
  is unset (the workers are one host and start together; nodes on other hosts joining the same
  cluster need MPS_CLUSTER_SECRET set on every host).

Signals: SIGTERM or SIGINT is passed on to every worker, which then drains as a single process
does (mps.serve: MPS_SHUTDOWN_GRACE, then the hand-over of its shards); a second signal is
passed on too and ends the grace at once. The workers run in a process group of their own, so a
terminal's Ctrl-C reaches them once, through the supervisor; each asks the kernel to send it
SIGTERM if the supervisor dies (`follow_supervisor`), so no worker outlives it.

A worker that ends while no signal was given is started again after a pause that doubles from
half a second up to 30 s, reset once it has run for a minute. A worker that ends with the exit
status of a bad setting (2: a setting refused, or an address it cannot listen on) is not: the
supervisor stops the others and exits 2, since every restart would fail the same way.

The supervisor exits 0 when every worker stopped cleanly after a signal, 1 when one did not.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import secrets
import signal
import socket
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mps.config import ConfigError, Settings

__all__ = [
    "EXIT_BAD_SETTING",
    "PortTaken",
    "Worker",
    "follow_supervisor",
    "plan_workers",
    "supervise",
    "worker_index",
]

logger = logging.getLogger(__name__)

# A worker ending with this status would end so again if restarted: run.py's exit status for a
# refused setting, and a worker's for an address it cannot listen on.
EXIT_BAD_SETTING = 2
# Names this process as the worker of a supervisor ("<index>:<supervisor's pid>"); set by the
# supervisor only, so not a setting anyone gives.
_WORKER_VARIABLE = "MPS_WORKER"
# The first restart's pause, doubled for each quick death in a row, up to the cap.
FIRST_RESTART_DELAY = 0.5
MAX_RESTART_DELAY = 30.0
# A worker that ran this long before it ended starts the doubling over.
STEADY_AFTER = 60.0
_PR_SET_PDEATHSIG = 1


class PortTaken(Exception):
    """Something already listens on the port the workers are to share."""


@dataclass(frozen=True)
class Worker:
    """How one worker is started: its command (run.py and its options) and environment."""

    index: int
    node_id: str
    command: tuple[str, ...]
    env: Mapping[str, str] = field(repr=False)


def worker_index(env: Mapping[str, str]) -> int | None:
    """The index of this process among its supervisor's workers; None when not a worker."""
    value = env.get(_WORKER_VARIABLE)
    return int(value.split(":", 1)[0]) if value else None


def follow_supervisor(env: Mapping[str, str]) -> None:
    """Make the kernel send this worker SIGTERM when its supervisor dies (Linux), so that a
    supervisor killed outright leaves no worker serving on its port; then it drains as after a
    signal. A supervisor already gone gets the same answer at once."""
    value = env.get(_WORKER_VARIABLE)
    if not value or not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    # The supervisor may have died before the request: then this process has another parent.
    if os.getppid() != int(value.split(":", 1)[1]):
        os.kill(os.getpid(), signal.SIGTERM)


def plan_workers(
    settings: Settings, run_py: Sequence[str], argv: Sequence[str], env: Mapping[str, str]
) -> list[Worker]:
    """The workers of `settings.workers`, each `run_py argv…` with the options and variables
    that make it one member of the host's cluster. Raises ConfigError for ports that do not
    fit (the public port must be named; each worker's peer, metrics and own ports must exist
    and be apart)."""
    count = settings.workers
    if settings.port == 0:
        msg = "MPS_WORKERS needs a port to share (MPS_PORT): 0 would give each worker another"
        raise ConfigError(msg)
    ports = {
        name: _consecutive(first, count, name, settings.port)
        for name, first in (
            ("MPS_PEER_PORT", settings.peer_port),
            ("MPS_METRICS_PORT", settings.metrics_port),
            ("MPS_WORKER_PORT", settings.worker_port),
        )
    }
    _refuse_overlaps(ports, count)
    peer_ports, metrics_ports, own_ports = ports.values()
    cluster_secret = env.get("MPS_CLUSTER_SECRET")
    if not cluster_secret:
        cluster_secret = secrets.token_urlsafe(48)
        logger.info(
            "workers: a cluster secret was generated for this run's workers; set "
            "MPS_CLUSTER_SECRET when nodes of other hosts join this cluster"
        )
    workers = []
    for index in range(1, count + 1):
        node_id = f"{settings.node_id}-w{index}"
        options = ["--workers", "1", "--cluster", "on", "--node-id", node_id]
        if metrics_ports[index - 1]:
            options += ["--metrics-port", str(metrics_ports[index - 1])]
        worker_env = {
            **env,
            "MPS_PEER_PORT": str(peer_ports[index - 1]),
            "MPS_CLUSTER_SECRET": cluster_secret,
            _WORKER_VARIABLE: f"{index}:{os.getpid()}",
        }
        if own_ports[index - 1]:
            worker_env["MPS_WORKER_PORT"] = str(own_ports[index - 1])
        # argparse keeps an option's last value, so these override the same options in argv.
        workers.append(Worker(index, node_id, (*run_py, *argv, *options), worker_env))
    return workers


def _consecutive(first: int | None, count: int, name: str, service_port: int) -> list[int]:
    """`count` ports from `first` on; zeros when `first` is unset (0: any free port)."""
    if not first:
        return [0] * count
    ports = list(range(first, first + count))
    if ports[-1] > 65535 or service_port in ports:
        msg = (
            f"{name}={first} gives the {count} workers ports {first} to {ports[-1]}, which "
            f"must be port numbers and leave out the service's port {service_port}"
        )
        raise ConfigError(msg)
    return ports


def _refuse_overlaps(ports: Mapping[str, Sequence[int]], count: int) -> None:
    """Raise ConfigError when two settings' ranges of worker ports share a port: a worker
    would fail to bind the second only once it had started."""
    names = list(ports)
    for at, first in enumerate(names):
        for second in names[at + 1 :]:
            if {p for p in ports[first] if p} & {p for p in ports[second] if p}:
                msg = (
                    f"{first} and {second} overlap: each of the {count} workers takes "
                    "the next port of each, so set them at least that far apart"
                )
                raise ConfigError(msg)


def check_port_free(host: str, port: int) -> None:
    """Raise PortTaken when something listens on `host`:`port`: binding without SO_REUSEPORT
    fails there, where the workers' binding with it might join a stranger's socket."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        msg = f"cannot listen on {host}:{port}: {exc.strerror or exc}"
        raise PortTaken(msg) from None
    with socket.socket(family, kind, proto) as probe:
        # As aiohttp binds: a port left in TIME_WAIT by the last run is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            msg = f"cannot listen on {host}:{port}: {exc.strerror or exc}"
            raise PortTaken(msg) from None


def supervise(settings: Settings, workers: Sequence[Worker]) -> int:
    """Run `workers` until SIGTERM or SIGINT, restarting any that ends meanwhile; the exit
    status (see the module's docstring). Raises PortTaken before starting any worker."""
    check_port_free(settings.host, settings.port)
    return asyncio.run(_Supervisor(workers).run())


class _Supervisor:
    """The workers' processes, run on one event loop (the supervisor's only thread of work)."""

    def __init__(self, workers: Sequence[Worker]) -> None:
        self.workers = list(workers)
        self.running: dict[int, asyncio.subprocess.Process] = {}
        self.stopping = False
        self.status = 0
        self._stop: asyncio.Event | None = None

    async def run(self) -> int:
        self._stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._signal, sig)
        logger.info("workers: starting %d, sharing the port", len(self.workers))
        await asyncio.gather(*(self._keep(worker) for worker in self.workers))
        logger.info("workers: all stopped")
        return self.status

    def _signal(self, sig: signal.Signals) -> None:
        """Pass the signal on: the first starts every worker's drain, a second ends its grace."""
        if not self.stopping:
            logger.info("workers: %s, stopping every worker", sig.name)
        self.stopping = True
        assert self._stop is not None
        self._stop.set()
        for process in self.running.values():
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(sig)

    def _fail(self, status: int) -> None:
        """Stop every worker and end with `status`: restarting would not help."""
        self.status = max(self.status, status)
        if not self.stopping:
            self._signal(signal.SIGTERM)

    async def _keep(self, worker: Worker) -> None:
        """Run `worker`, and again after it ends, until the supervisor stops."""
        loop = asyncio.get_running_loop()
        quick_deaths = 0
        while not self.stopping:
            started = loop.time()
            try:
                process = await asyncio.create_subprocess_exec(
                    *worker.command, env=dict(worker.env), process_group=0
                )
            except OSError as exc:
                logger.error("workers: cannot start worker %d: %s", worker.index, exc)
                self._fail(1)
                return
            self.running[worker.index] = process
            if self.stopping:
                # A signal came while it was being started: it missed what the others got.
                process.send_signal(signal.SIGTERM)
            logger.info(
                "workers: worker %d started (pid %d, node %s)",
                worker.index,
                process.pid,
                worker.node_id,
            )
            status = await process.wait()
            del self.running[worker.index]
            if self.stopping:
                # A worker still starting when the signal came ends by it, before its handler.
                if status not in (0, -signal.SIGTERM, -signal.SIGINT):
                    logger.warning("workers: worker %d ended with %d", worker.index, status)
                    self.status = max(self.status, 1)
                return
            if status == EXIT_BAD_SETTING:
                logger.error(
                    "workers: worker %d refused its settings (exit %d, its reason is above); "
                    "stopping every worker",
                    worker.index,
                    status,
                )
                self._fail(EXIT_BAD_SETTING)
                return
            quick_deaths = quick_deaths + 1 if loop.time() - started < STEADY_AFTER else 1
            delay = min(FIRST_RESTART_DELAY * 2 ** (quick_deaths - 1), MAX_RESTART_DELAY)
            logger.error(
                "workers: worker %d (pid %d) ended unexpectedly (%s); starting it again in %g s",
                worker.index,
                process.pid,
                _ending(status),
                delay,
            )
            assert self._stop is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)


def _ending(status: int) -> str:
    """How a process ended, from asyncio's returncode: -N is signal N."""
    if status < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-status).name}"
        return f"signal {-status}"
    return f"exit {status}"
