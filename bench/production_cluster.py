"""A production cluster on this machine, as the runbook builds one: `scripts/cluster --production`.

    scripts/cluster --production                      # three nodes behind nginx on :8080
    scripts/cluster --production 2                    # two
    scripts/cluster --production --balancer haproxy   # docs/haproxy.cfg instead of nginx

It does what docs/cluster.md, "A production cluster", asks of an operator, with this machine
standing in for the node machines and the balancer's (bench/cluster_layout.py says where each
file and port is):

- the settings are deploy/production.env.example with its values filled in, written to
  production.env (0600; what /etc/mps/production.env is), and each node's own settings to
  nodeK.env (what /etc/mps/<node>.env is: its id, its ports, its data directory). Nothing else is
  set: a node runs in production mode, on the local Postgres database and RabbitMQ, with the
  shutdown grace, the trusted proxy (the balancer, on loopback) and the public URL (the
  balancer's) of those files. The secrets are generated once, into secrets.env (0600), so the
  database's sealed values stay readable from one run to the next;
- each node is started as deploy/mps@.service starts it: a clean environment, the two files
  read in that order, then `run.py`; its log is nodeK.log;
- the balancer is deploy/nginx.conf under nginx (or docs/haproxy.cfg under HAProxy) with only
  addresses and paths replaced (bench/balancers.py), and deploy/shard-map keeps its map current
  every 2 s (nginx reads the map at each request; HAProxy is reloaded when the map changed);
- mail: sign-in is by emailed code, and production sends only over SMTP with a verified
  certificate. Unless MPS_CLUSTER_SMTP_URL names a relay (MPS_CLUSTER_SMTP_CA_FILE for a private
  CA), a relay on loopback (bench/mail_relay.py) takes the mail and delivers nothing: each
  message is a file in mail/, where a sign-in code can be read.

The layout is written to cluster.json, which scripts/rolling-restart reads: it restarts a node
with the same `start_node` as here. Ctrl-C (or SIGTERM) stops every node, whoever started it
last, with one SIGTERM each (a second would end its grace), then the balancer.

Standard library and the service's own dependencies only: nothing is installed for it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.balancers import HAPROXY, NGINX, balancer_for
from bench.cluster_layout import (
    ROOT,
    Layout,
    alive,
    node_pid,
    start_node,
    stop_node,
    wait_ready,
    write_settings,
)
from bench.mail_relay import MailRelay

# How often the shard map is written again (docs/cluster.md: "every two seconds").
MAP_EVERY = 2.0
# The development cluster (scripts/cluster) uses the default name, "mps", on the same broker.
CLUSTER_NAME = "mps-production"
READY_WITHIN = 120.0

__all__ = ["main", "run"]


def _running(process: subprocess.Popen[bytes]) -> Callable[[], bool]:
    return lambda: process.poll() is None


def _processes(layout: Layout) -> Iterator[tuple[int, int]]:
    for node in range(1, layout.nodes + 1):
        pid = node_pid(layout, node)
        if pid is not None and alive(pid):
            yield node, pid


async def run(layout: Layout, smtp_url: str | None, smtp_ca_file: str | None) -> int:
    """Start the relay, the nodes and the balancer; keep the map current until a signal; then
    stop every node (each drains), the balancer and the relay."""
    layout.folder.mkdir(parents=True, exist_ok=True)
    layout.folder.chmod(0o700)
    relay: MailRelay | None = None
    if smtp_url is None:
        layout.mail.mkdir(mode=0o700, exist_ok=True)
        relay = MailRelay(layout.mail, layout.mail_port)
        await relay.start()
        smtp_url, smtp_ca_file = f"smtps://127.0.0.1:{layout.mail_port}", str(relay.cert)
    write_settings(layout, smtp_url, smtp_ca_file or "", os.environ.get("MPS_SHUTDOWN_GRACE"))
    layout.save()

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    children = {node: start_node(layout, node) for node in range(1, layout.nodes + 1)}
    balancer = balancer_for(layout)
    try:
        for node, process in children.items():
            try:
                await asyncio.to_thread(
                    wait_ready, layout.node_url(node), READY_WITHIN, _running(process)
                )
            except (RuntimeError, TimeoutError) as exc:
                tail = layout.log(node).read_text(errors="replace").splitlines()[-15:]
                print(f"node{node}: {exc}; the end of {layout.log(node)}:", *tail, sep="\n")
                return 1
            print(f"node{node}: {layout.node_url(node)} ready (log {layout.log(node)})")
        balancer.start()
        print(f"balancer: {layout.url} ({balancer.name}; its files in {layout.balancer})")
        if relay is not None:
            print(f"mail: every message is a file in {layout.mail}")
        print(f"ready; Ctrl-C stops every node (each drains), then {balancer.name}", flush=True)
        while not stop.is_set():
            await asyncio.to_thread(balancer.write_map)
            for node, process in list(children.items()):
                # A node restarted by someone else (scripts/rolling-restart) is theirs to reap.
                if process.poll() is not None:
                    print(f"node{node} (pid {process.pid}) exited {process.returncode}")
                    del children[node]
            sys.stdout.flush()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), MAP_EVERY)
    finally:
        running = list(_processes(layout))
        print(f"stopping {len(running)} nodes (each hands its shards over first)", flush=True)
        await asyncio.gather(*(asyncio.to_thread(stop_node, layout, node) for node, _ in running))
        for process in children.values():
            process.wait()
        balancer.stop()
        if relay is not None:
            await relay.stop()
        print("stopped", flush=True)
    return 0


def main(argv: list[str]) -> int:
    env = os.environ
    parser = argparse.ArgumentParser(
        prog="scripts/cluster --production",
        description="N production-mode nodes behind a balancer on this machine "
        "(docs/operations.md; scripts/cluster --help says more).",
    )
    parser.add_argument("nodes", nargs="?", type=int, default=3, help="how many nodes (3)")
    parser.add_argument(
        "--balancer",
        choices=["nginx", "haproxy"],
        default=env.get("MPS_CLUSTER_BALANCER", "nginx"),
        help="deploy/nginx.conf (default) or docs/haproxy.cfg",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=int(env.get("MPS_CLUSTER_PORT", "8080")),
        help="the balancer's port P (8080); node K takes P+K, P+10+K and P+20+K, the relay P+30",
    )
    parser.add_argument(
        "--folder",
        default=env.get("MPS_CLUSTER_DIR", str(ROOT / "var" / "cluster-production")),
        help="where its files go (var/cluster-production)",
    )
    parser.add_argument(
        "--database-url",
        default=env.get(
            "MPS_CLUSTER_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/mps_production"
        ),
    )
    parser.add_argument(
        "--broker-url",
        default=env.get("MPS_CLUSTER_BROKER_URL", "amqp://guest:guest@127.0.0.1:5672/"),
    )
    parser.add_argument("--cluster-name", default=env.get("MPS_CLUSTER_NAME", CLUSTER_NAME))
    args = parser.parse_args(argv)
    if not 1 <= args.nodes <= 9:
        parser.error("give 1 to 9 nodes (each takes ports P+K, P+10+K and P+20+K)")
    program = HAPROXY if args.balancer == "haproxy" else NGINX
    if not Path(program).exists():
        parser.error(f"{program} is missing: scripts/services production installs it")
    layout = Layout(
        folder=Path(args.folder).absolute(),
        nodes=args.nodes,
        port=args.port,
        database_url=args.database_url,
        broker_url=args.broker_url,
        cluster_name=args.cluster_name,
        python=sys.executable,
        balancer_kind=args.balancer,
    )
    return asyncio.run(
        run(layout, env.get("MPS_CLUSTER_SMTP_URL"), env.get("MPS_CLUSTER_SMTP_CA_FILE"))
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
