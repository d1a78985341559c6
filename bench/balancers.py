"""The balancer in front of a cluster on this machine: deploy/nginx.conf run by nginx, or
docs/haproxy.cfg run by HAProxy, each with only its addresses and paths replaced, and its shard
map kept current by deploy/shard-map (bench/production_cluster.py runs them).

    balancer = balancer_for(layout)     # Nginx or Haproxy, as layout.balancer_kind says
    balancer.start()                    # writes the map, then starts it on layout.port
    balancer.write_map()                # every 2 s: the map again (HAProxy reloaded if new)
    balancer.stop()

Both examples describe three nodes. For another number, their per-node blocks are written from
their own lines (the node, then the others as backups; every node in `any`), and the examples'
three give back the examples' text exactly, so only addresses differ from what the runbook
shows. A replaced text that is no longer in an example is an error: the example cannot drift
away from what runs here unnoticed.
"""

from __future__ import annotations

import os
import pwd
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from bench.cluster_layout import DEPLOY, ROOT, Layout

NGINX = "/usr/sbin/nginx"
HAPROXY = "/usr/sbin/haproxy"
NGINX_CONF = DEPLOY / "nginx.conf"
HAPROXY_CFG = ROOT / "docs" / "haproxy.cfg"

__all__ = [
    "HAPROXY",
    "NGINX",
    "Haproxy",
    "Nginx",
    "balancer_for",
    "nginx_command",
    "port_open",
    "render_haproxy",
    "render_nginx",
]


def _replaced(text: str, pairs: list[tuple[str, str]], example: Path) -> str:
    for old, new in pairs:
        if old not in text:
            msg = f"{example.name} no longer has {old!r}"
            raise ValueError(msg)
        text = text.replace(old, new)
    return text


def _addresses(layout: Layout) -> list[str]:
    return [f"127.0.0.1:{layout.node_port(node)}" for node in range(1, layout.nodes + 1)]


def _per_node(
    example: str,
    blocks: re.Pattern[str],
    write: Callable[[list[str]], str],
    addresses: list[str],
) -> str:
    """`example` with its per-node blocks (matched by `blocks`) written by `write` for
    `addresses`, once it is checked that `write` gives back the example's own for its three."""
    found = blocks.search(example)
    if found is None or write([f"10.0.0.{i}:8080" for i in (1, 2, 3)]) != found.group(0):
        msg = "the example's per-node blocks changed shape: update bench/balancers.py"
        raise ValueError(msg)
    return example[: found.start()] + write(addresses) + example[found.end() :]


# --- nginx ------------------------------------------------------------------------------------

UPSTREAMS = re.compile(r"(?ms)^    upstream node1 \{$.*?^    upstream any \{$.*?^    \}$")


def _nginx_upstreams(example: str) -> Callable[[list[str]], str]:
    block = re.search(r"(?ms)^    upstream node1 \{\n(.*?)\n    \}", example)
    lines = block.group(1).splitlines() if block is not None else ["", ""]
    primary, backup = lines[0], lines[1]
    rest = [line for line in lines if "server " not in line]
    anyone = re.search(r"(?m)^((?:    #.*\n)*)    upstream any \{\n(.*)$", example)
    said, round_robin = (anyone.group(1), anyone.group(2)) if anyone is not None else ("", "")

    def write(addresses: list[str]) -> str:
        blocks = []
        for index, address in enumerate(addresses):
            servers = [primary.replace("10.0.0.1:8080", address)]
            # By place, not by address: one process may stand for several nodes.
            servers += [
                backup.replace("10.0.0.2:8080", other)
                for place, other in enumerate(addresses)
                if place != index
            ]
            body = "\n".join([*servers, *rest])
            blocks.append(f"    upstream node{index + 1} {{\n{body}\n    }}")
        everyone = "\n".join([*(round_robin.replace("10.0.0.1:8080", a) for a in addresses), *rest])
        blocks.append(f"{said}    upstream any {{\n{everyone}\n    }}")
        return "\n\n".join(blocks)

    return write


def render_nginx(example: str, folder: Path, port: int, addresses: list[str]) -> str:
    """deploy/nginx.conf listening on loopback `port` in front of the nodes at `addresses`
    (node1 first; one address may stand for several nodes), its shard map (shards.map) and
    access log (access.log) in `folder`."""
    text = _replaced(
        example,
        [
            ("/etc/nginx/mps/nginx-shard.js", str(DEPLOY / "nginx-shard.js")),
            ("/etc/nginx/mps/shards.map", str(folder / "shards.map")),
            ("/var/log/nginx/mps-access.log", str(folder / "access.log")),
            ("listen 80;", f"listen 127.0.0.1:{port};"),
        ],
        NGINX_CONF,
    )
    return _per_node(text, UPSTREAMS, _nginx_upstreams(example), addresses)


def nginx_command(folder: Path) -> list[str]:
    """nginx in the foreground on folder/nginx.conf (render_nginx's), its pid file and error
    log in `folder`."""
    conf, pid, errors = folder / "nginx.conf", folder / "nginx.pid", folder / "error.log"
    directives = f"daemon off; pid {pid}; error_log {errors} warn;"
    if os.geteuid() == 0:
        # The workers read the shard map at each request, in a folder that may be its owner's
        # only: they run as the user this runs as (root's workers would otherwise be nobody).
        # That user is the effective one, whatever $USER or $LOGNAME say.
        directives += f" user {pwd.getpwuid(os.geteuid()).pw_name};"
    return [NGINX, "-p", str(folder), "-c", str(conf), "-g", directives]


# --- HAProxy ----------------------------------------------------------------------------------

BACKENDS = re.compile(r"(?ms)^backend node1$.*?^backend any$.*?(?=\n\n|\n*\Z)")


def _haproxy_backends(example: str) -> Callable[[list[str]], str]:
    block = re.search(r"(?m)^backend node1\n((?:    .*\n?)+)", example)
    lines = block.group(1).splitlines() if block is not None else ["", ""]
    primary, backup = lines[0], lines[1]
    balance = re.search(r"(?m)^backend any\n(    balance .*)$", example)
    policy = [balance.group(1)] if balance is not None else []

    def server(line: str, name: str, address: str, old: str) -> str:
        number = old[len("10.0.0.") : -len(":8080")]
        return line.replace(f"node{number} ", f"{name} ").replace(old, address)

    def write(addresses: list[str]) -> str:
        blocks = []
        names = [f"node{index + 1}" for index in range(len(addresses))]
        for name, address in zip(names, addresses, strict=True):
            servers = [server(primary, name, address, "10.0.0.1:8080")]
            servers += [
                server(backup, other_name, other, "10.0.0.2:8080")
                for other_name, other in zip(names, addresses, strict=True)
                if other != address
            ]
            blocks.append(f"backend {name}\n" + "\n".join(servers))
        everyone = [
            server(primary, name, address, "10.0.0.1:8080")
            for name, address in zip(names, addresses, strict=True)
        ]
        blocks.append("backend any\n" + "\n".join([*policy, *everyone]))
        return "\n\n".join(blocks)

    return write


def render_haproxy(example: str, layout: Layout) -> str:
    """docs/haproxy.cfg for `layout`: its runtime socket's and map's paths, its port and the
    nodes' addresses."""
    folder = layout.balancer
    text = _replaced(
        example,
        [
            ("stats socket /run/haproxy.sock", f"stats socket {folder / 'haproxy.sock'}"),
            ("bind :80", f"bind 127.0.0.1:{layout.port}"),
            ("/etc/haproxy/shards.map", str(folder / "shards.map")),
        ],
        HAPROXY_CFG,
    )
    return _per_node(text, BACKENDS, _haproxy_backends(example), _addresses(layout))


# --- Running one ------------------------------------------------------------------------------


class _Balancer:
    """A balancer process in the foreground of a session of its own, and its shard map."""

    name = ""
    map_format = ""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.folder = layout.balancer
        self.map = self.folder / "shards.map"
        self.process: subprocess.Popen[bytes] | None = None

    def configure(self) -> list[str]:
        """Write the configuration; the command that runs the balancer in the foreground."""
        raise NotImplementedError

    def reload_command(self) -> str | None:
        """What deploy/shard-map's --on-change runs once the balancer runs, if it needs one."""
        raise NotImplementedError

    def write_map(self) -> None:
        """Run deploy/shard-map once against the nodes' metrics, and say what changed. HAProxy
        is reloaded when the map changed (shard-map's --on-change); nginx is not, since
        nginx-shard.js reads the map at each request."""
        nodes = [
            f"node{node}=http://127.0.0.1:{self.layout.metrics_port(node)}/metrics"
            for node in range(1, self.layout.nodes + 1)
        ]
        before = self.map.read_text() if self.map.exists() else None
        command = [sys.executable, str(DEPLOY / "shard-map"), "--out", str(self.map)]
        command += ["--format", self.map_format]
        reload = self.reload_command() if self.process is not None else None
        if reload is not None:
            command += ["--on-change", reload]
        done = subprocess.run(
            [*command, *nodes], capture_output=True, text=True, check=False, timeout=30
        )
        if done.returncode != 0:
            print(f"deploy/shard-map failed ({done.returncode}): {done.stderr.strip()}")
        after = self.map.read_text()
        if before is not None and after != before:
            owners = Counter(line.split()[1].rstrip(";") for line in after.splitlines())
            held = ", ".join(f"{name} {count}" for name, count in sorted(owners.items()))
            print(f"shard map changed: {held or 'no shard owned'}")

    def start(self) -> None:
        self.folder.mkdir(exist_ok=True)
        command = self.configure()
        self.write_map()
        with (self.folder / f"{self.name}.out").open("ab") as log:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 10
        while not port_open(self.layout.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                msg = f"{self.name} did not start: see {self.folder}"
                raise RuntimeError(msg)
            time.sleep(0.05)

    def stop(self, graceful: signal.Signals) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(graceful)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Nginx(_Balancer):
    name = "nginx"
    map_format = "nginx"

    def configure(self) -> list[str]:
        text = render_nginx(
            NGINX_CONF.read_text(), self.folder, self.layout.port, _addresses(self.layout)
        )
        (self.folder / "nginx.conf").write_text(text)
        return nginx_command(self.folder)

    def reload_command(self) -> None:
        # nginx-shard.js reads the map at each request: nothing to reload.
        return None

    def stop(self, graceful: signal.Signals = signal.SIGQUIT) -> None:
        # SIGQUIT: finish what it is serving, then exit.
        super().stop(graceful)


class Haproxy(_Balancer):
    name = "haproxy"
    map_format = "haproxy"

    def configure(self) -> list[str]:
        cfg = self.folder / "haproxy.cfg"
        cfg.write_text(render_haproxy(HAPROXY_CFG.read_text(), self.layout))
        # Master-worker in the foreground: SIGUSR2 to the master loads the configuration and
        # the map again, in new workers, while the old ones finish their connections.
        return [HAPROXY, "-W", "-db", "-f", str(cfg), "-p", str(self.folder / "haproxy.pid")]

    def reload_command(self) -> str:
        assert self.process is not None
        return f"kill -USR2 {self.process.pid}"

    def stop(self, graceful: signal.Signals = signal.SIGUSR1) -> None:
        # SIGUSR1: stop listening, finish the connections, then exit.
        super().stop(graceful)


def balancer_for(layout: Layout) -> Nginx | Haproxy:
    return Haproxy(layout) if layout.balancer_kind == "haproxy" else Nginx(layout)


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
