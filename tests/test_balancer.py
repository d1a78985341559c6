"""The nginx example (deploy/nginx.conf, deploy/nginx-shard.js, deploy/shard-map) in front of a
real cluster of run.py nodes, as docs/cluster.md describes it: a session's request goes to its
company's owner, a request with nothing to hash goes round robin, and a node that is down is
routed around without an error reaching the client. The runbook's sizing is checked on the same
nodes: the connections a node holds to Postgres and to RabbitMQ.

The config is the example itself, with only its addresses and file paths replaced (each
replacement must find its text, so the example cannot drift from what is tested here). Its third
node is an address nothing listens on: a node down from the start.
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from mps.domain.shards import shard_of
from tests.cluster import LocalCluster, NodeMember, balanced_cluster, sign_up_on
from tests.conftest import REQUIRE_SERVICES
from tests.helpers import free_port
from tests.server import sockets_held, started, tcp_sockets

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
OPERATIONS = ROOT / "docs" / "operations.md"
API = "/api/v1"
NGINX = "/usr/sbin/nginx"
JS_MODULE = Path("/usr/lib/nginx/modules/ngx_http_js_module.so")
# How long a fact may take to become true (nginx writes its access line after answering).
WITHIN = 10.0


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    require_nginx()
    with balanced_cluster(tmp_path_factory.mktemp("balanced"), 2) as nodes:
        yield nodes


def require_nginx() -> None:
    """Skip the test when nginx or its JavaScript module is missing; fail it instead when the
    run requires its services."""
    if not (Path(NGINX).exists() and JS_MODULE.exists()):
        what = "nginx with its JavaScript module (scripts/services)"
        if REQUIRE_SERVICES:
            pytest.fail(f"{what} is required by this test run and is missing")
        pytest.skip(f"{what} is missing")


def stop_nginx(process: subprocess.Popen[bytes] | None) -> None:
    """Stop an nginx gracefully (SIGQUIT: it finishes the requests in hand), or kill it when it
    takes too long."""
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGQUIT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


class Nginx:
    """deploy/nginx.conf run by a real nginx on a loopback port, its three nodes at
    `addresses` ("host:port"), their metrics, for deploy/shard-map, at `metrics`."""

    def __init__(self, folder: Path, addresses: list[str], metrics: list[str]) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.access_log = folder / "access.log"
        self.shards_map = folder / "shards.map"
        self.addresses = addresses
        self.metrics = metrics
        self._process: subprocess.Popen[bytes] | None = None

    def config(self) -> str:
        text = (DEPLOY / "nginx.conf").read_text()
        for old, new in (
            ("/etc/nginx/mps/nginx-shard.js", str(DEPLOY / "nginx-shard.js")),
            ("/etc/nginx/mps/shards.map", str(self.shards_map)),
            ("/var/log/nginx/mps-access.log", str(self.access_log)),
            ("listen 80;", f"listen 127.0.0.1:{self.port};"),
            ("10.0.0.1:8080", self.addresses[0]),
            ("10.0.0.2:8080", self.addresses[1]),
            ("10.0.0.3:8080", self.addresses[2]),
        ):
            assert old in text, f"deploy/nginx.conf no longer has {old!r}"
            text = text.replace(old, new)
        return text

    def write_map(self) -> str:
        """Run deploy/shard-map against the nodes' metrics; the map it wrote."""
        nodes = [f"node{i + 1}={url}" for i, url in enumerate(self.metrics)]
        done = subprocess.run(
            [sys.executable, str(DEPLOY / "shard-map"), "--out", str(self.shards_map), *nodes],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return self.shards_map.read_text()

    def __enter__(self) -> Nginx:
        conf = self.folder / "nginx.conf"
        conf.write_text(self.config())
        pid = self.folder / "nginx.pid"
        self._log = (self.folder / "nginx.out").open("ab")
        self._process = subprocess.Popen(
            [
                NGINX,
                "-p",
                str(self.folder),
                "-c",
                str(conf),
                "-g",
                f"daemon off; pid {pid}; error_log {self.folder / 'error.log'} warn;"
                # nginx-shard.js reads the shard map at each request, in this test's private
                # folder: the workers run as its owner (as root, nginx's would be nobody).
                + (f" user {pwd.getpwuid(os.geteuid()).pw_name};" if os.geteuid() == 0 else ""),
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        if not started(self._process, lambda: _port_open(self.port), time.monotonic() + WITHIN):
            self.__exit__()
            msg = f"nginx did not start:\n{self.errors()}"
            raise AssertionError(msg)
        return self

    def __exit__(self, *exc: object) -> None:
        stop_nginx(self._process)
        self._log.close()

    def errors(self) -> str:
        texts = [p.read_text(errors="replace") for p in (self.folder / "nginx.out",)]
        error_log = self.folder / "error.log"
        if error_log.exists():
            texts.append(error_log.read_text(errors="replace"))
        return "\n".join(texts)

    def line_for(self, request_line: str, nth: int = 0) -> dict[str, str]:
        """The `nth` access line of `request_line` ("POST /api/v1/…"), as its key=value fields,
        once nginx has written it."""
        deadline = time.monotonic() + WITHIN
        while True:
            text = self.access_log.read_text() if self.access_log.exists() else ""
            lines = [line for line in text.splitlines() if f'"{request_line} HTTP/1.1"' in line]
            if len(lines) > nth:
                fields = re.findall(r'(\w+)=("[^"]*"|\S*)', lines[nth])
                return {name: value.strip('"') for name, value in fields}
            assert time.monotonic() < deadline, f"no access line {nth} for {request_line}"
            time.sleep(0.02)


def _in_front_of(folder: Path, cluster: LocalCluster) -> Nginx:
    # Nothing listens there: the example's third node, down from the start.
    down = f"127.0.0.1:{free_port()}"
    return Nginx(
        folder,
        [*(f"127.0.0.1:{node.port}" for node in cluster.nodes), down],
        [*(f"{node.base_url}/metrics" for node in cluster.nodes), f"http://{down}/metrics"],
    )


def _owner_address(cluster: LocalCluster, nginx: Nginx, company: str) -> str:
    return nginx.addresses[cluster.owner_of(company)]


async def _create(
    http: aiohttp.ClientSession, nginx: Nginx, member: NodeMember, key: str
) -> dict[str, Any]:
    async with http.post(
        f"{nginx.url}{API}/merchant/payments",
        json={"amountMinor": "1250", "currency": "USD", "description": key},
        headers=member.headers(**{"Idempotency-Key": key}),
    ) as response:
        assert response.status == 201, await response.text()
        created: dict[str, Any] = await response.json()
        return created


def test_a_node_holds_the_connections_the_runbook_sizes_postgres_and_rabbitmq_for(
    cluster: LocalCluster,
) -> None:
    # given: the runbook's figures
    runbook = OPERATIONS.read_text()
    assert "opens **11 connections**" in runbook
    assert "opens **2 connections**" in runbook

    # then: each running node holds exactly those
    for node in cluster.nodes:
        assert _connections_to(node.pid, 5432) == 11
        assert _connections_to(node.pid, 5672) == 2


async def test_nginx_sends_a_session_request_to_its_company_owner_and_routes_around_a_stopped_node(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    nginx = _in_front_of(tmp_path, cluster)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=40)) as http:
        # given: a company (signed up on a node: the dev mailbox is the node's own) and the
        # balancer's map, written from the nodes' metrics by the job the example names
        member = await sign_up_on(http, cluster.nodes[0].base_url, "balanced@example.com")
        shard = shard_of(member.company)
        owner = cluster.owner_of(member.company)
        assert re.search(rf"^{shard} node{owner + 1};$", nginx.write_map(), re.MULTILINE)

        with nginx:
            # when: a create and a read through nginx
            created = await _create(http, nginx, member, "order-1")
            async with http.get(
                f"{nginx.url}{API}/merchant/payments/{created['id']}", headers=member.headers()
            ) as response:
                assert response.status == 200, await response.text()
                assert (await response.json())["id"] == created["id"]

            # then: nginx hashed the token to the service's shard and sent both to its owner
            for request in (
                f"POST {API}/merchant/payments",
                f"GET {API}/merchant/payments/{created['id']}",
            ):
                line = nginx.line_for(request)
                assert line["shard"] == str(shard)
                assert line["upstream"] == nginx.addresses[owner]

            # and: requests without a company go round robin, past the node that is down
            for attempt in range(4):
                async with http.post(
                    f"{nginx.url}{API}/auth/login", json={"email": f"nobody{attempt}@example.com"}
                ) as response:
                    assert response.status == 200, await response.text()
            assert nginx.errors().count("connect() failed") >= 1

            # when: the owner stops behind the balancer, whose map still names it
            assert cluster.nodes[owner].stop() == 0

            # then: a read and a create through nginx still answer, from the other node
            survivor = nginx.addresses[1 - owner]
            async with http.get(
                f"{nginx.url}{API}/merchant/payments/{created['id']}", headers=member.headers()
            ) as response:
                assert response.status == 200, await response.text()
            await _create(http, nginx, member, "order-2")
            for request in (
                f"GET {API}/merchant/payments/{created['id']}",
                f"POST {API}/merchant/payments",
            ):
                assert nginx.line_for(request, nth=1)["upstream"].split(", ")[-1] == survivor


def _connections_to(pid: int, port: int) -> int:
    """How many established TCP connections process `pid` holds to `port`."""
    return sockets_held(pid, tcp_sockets(port, listening=False))
